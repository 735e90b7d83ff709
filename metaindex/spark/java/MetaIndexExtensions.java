package io.metaindex.spark;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;

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
 */
public final class MetaIndexExtensions extends AbstractFunction1<SparkSessionExtensions, BoxedUnit> {
    @Override
    public BoxedUnit apply(SparkSessionExtensions extensions) {
        extensions.injectPreCBORule(new AbstractFunction1<SparkSession, Rule<LogicalPlan>>() {
            @Override
            public Rule<LogicalPlan> apply(SparkSession session) {
                return new MetaIndexRule(sessionId(session), true);
            }
        });
        return BoxedUnit.UNIT;
    }

    /** The session's UUID (the classic session's {@code sessionUUID()}, whose class moved
     * between Spark lines, so found by name); a fresh UUID if it has none. */
    static String sessionId(SparkSession session) {
        try {
            return String.valueOf(session.getClass().getMethod("sessionUUID").invoke(session));
        } catch (ReflectiveOperationException | RuntimeException e) {
            return java.util.UUID.randomUUID().toString();
        }
    }
}
