package io.metaindex.spark;

import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.catalyst.FunctionIdentifier;
import org.apache.spark.sql.catalyst.expressions.Alias$;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.ExpressionInfo;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.execution.ColumnarRule;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.types.DataTypes;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import scala.Option;
import scala.Tuple3;
import scala.runtime.AbstractFunction1;
import scala.runtime.BoxedUnit;

/**
 * Automatic skipping for a whole application by conf:
 * {@code spark.sql.extensions=io.metaindex.spark.MetaIndexExtensions} with the metaindex jar in
 * {@code spark.jars}.
 *
 * <p>Injects {@link MetaIndexRule} into every session of the application as a pre-CBO rule:
 * Spark runs that batch once, after its early scan push-down (where partition pruning of catalog
 * tables turns a {@code CatalogFileIndex} into the listing of the partitions left), so the rule
 * wraps the file index that is really listed. With no Python callback registered (no
 * {@code enable(spark)} in a PySpark driver) the scans ask the pruning process
 * ({@link PruningProcess}); a session turns skipping off with
 * {@code spark.metaindex.enabled=false}.
 *
 * <p>Also injects a columnar rule that puts a {@link MetaIndexSkipExec} over each such scan (the
 * files metaindex skipped, as SQL metrics of the plan) and the SQL function
 * {@code metaindex_last_query_stats()} (the session's last query's scan stats as JSON, from
 * {@link ScanStatsRegistry}; what {@code last_query_stats(spark)} reads under Spark Connect).
 */
public final class MetaIndexExtensions extends AbstractFunction1<SparkSessionExtensions, BoxedUnit> {
    private static final Logger LOG = LoggerFactory.getLogger(MetaIndexExtensions.class);
    private static final AtomicBoolean MISMATCH_LOGGED = new AtomicBoolean();

    /** Injects the rule, the columnar rule and the function; nothing (and one warning in the
     * JVM's log, the first time) when this jar is not the one for the running Spark line. */
    @Override
    public BoxedUnit apply(SparkSessionExtensions extensions) {
        String mismatch = ShimBuild.mismatch();
        if (mismatch != null) {
            if (MISMATCH_LOGGED.compareAndSet(false, true)) {
                LOG.warn(mismatch);
            }
            return BoxedUnit.UNIT;
        }
        extensions.injectPreCBORule(new AbstractFunction1<SparkSession, Rule<LogicalPlan>>() {
            @Override
            public Rule<LogicalPlan> apply(SparkSession session) {
                return new MetaIndexRule(SparkCompat.sessionId(session), true);
            }
        });
        extensions.injectColumnar(new AbstractFunction1<SparkSession, ColumnarRule>() {
            @Override
            public ColumnarRule apply(SparkSession session) {
                return new SkipMetricsRule();
            }
        });
        extensions.injectFunction(new Tuple3<>(new FunctionIdentifier(ScanStatsRegistry.FUNCTION),
                new ExpressionInfo(LastQueryStats.class.getName(), null,
                        ScanStatsRegistry.FUNCTION,
                        "_FUNC_() - The scan stats metaindex recorded for this session's most "
                                + "recent query that scanned a filtered table, as JSON "
                                + "(NULL when none).", "", "", "", "misc_funcs", "", "", ""),
                new LastQueryStats()));
        return BoxedUnit.UNIT;
    }

    /** Puts a {@link MetaIndexSkipExec} over each filtered scan the extension's rule wrapped,
     * before Spark inserts its row/columnar transitions (with and without adaptive execution:
     * both apply the session's columnar rules to every plan they run). Leaves the plan as it
     * is on any error. */
    static final class SkipMetricsRule extends ColumnarRule {
        private final Rule<SparkPlan> rule = new Rule<SparkPlan>() {
            @Override
            public SparkPlan apply(SparkPlan plan) {
                try {
                    return MetaIndexSkipExec.insert(plan);
                } catch (RuntimeException | LinkageError e) {
                    LOG.warn("metaindex: no skipping metrics in this plan", e);
                    return plan;
                }
            }
        };

        @Override
        public Rule<SparkPlan> preColumnarTransitions() {
            return rule;
        }
    }

    /** {@code metaindex_last_query_stats()}: resolved while the calling session is active, to
     * a literal of its record in {@link ScanStatsRegistry}. */
    static final class LastQueryStats extends SparkCompat.FunctionBuilder {
        @Override
        Expression build(List<Expression> args) {
            if (!args.isEmpty()) {
                throw new IllegalArgumentException(ScanStatsRegistry.FUNCTION
                        + "() takes no arguments, not " + args.size());
            }
            Option<SparkSession> active = SparkSession.getActiveSession();
            String json = active.isEmpty() ? null
                    : ScanStatsRegistry.lastQuery(SparkCompat.sessionId(active.get()));
            Expression value = Literal.create(json, DataTypes.StringType);
            // named after the call, not the JSON (Spark names a string literal by its value);
            // Spark drops the alias where the call is not a top-level column
            String name = ScanStatsRegistry.FUNCTION + "()";
            Alias$ alias = Alias$.MODULE$;
            return alias.apply(value, name, alias.apply$default$3(value, name),
                    alias.apply$default$4(value, name), alias.apply$default$5(value, name),
                    alias.apply$default$6(value, name));
        }
    }
}
