package io.metaindex.spark;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.spark.sql.ExperimentalMethods;
import org.apache.spark.sql.catalyst.catalog.CatalogTable;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.execution.datasources.FileFormat;
import org.apache.spark.sql.execution.datasources.FileIndex;
import org.apache.spark.sql.execution.datasources.HadoopFsRelation;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
import org.apache.spark.sql.execution.datasources.csv.CSVFileFormat;
import org.apache.spark.sql.execution.datasources.json.JsonFileFormat;
import org.apache.spark.sql.execution.datasources.orc.OrcFileFormat;
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import scala.Option;

/**
 * The optimizer rule of automatic skipping: wraps the file index of every V1 file relation
 * ({@link LogicalRelation} over a {@link HadoopFsRelation}) of Spark's own Parquet, CSV, JSON
 * or ORC format (exactly those classes: a subclass, such as Delta's Parquet format, reads
 * files its own way) in a {@link MetaIndexFileIndex}, which sends the format's short name,
 * the relation's reader options and its data schema with each pruning request: an index is
 * used only for scans that read the table as it was indexed.
 * Plain Delta reads are wrapped too, after Delta's own data skipping ({@link DeltaScans}: the
 * files Delta's index returns are filtered further, never instead), as Parquet scans. The walk
 * goes into subquery expressions too ({@link SubqueryPlans}): a Delta read inside one is
 * prepared by Delta with the plan around it, not before.
 *
 * <p>Installed either per session by {@code enable(spark)} in
 * {@code experimental().extraOptimizations()}, or for every session by
 * {@link MetaIndexExtensions}; both run after Spark's own partition pruning. Wrapping is
 * idempotent (a wrapper is recognised by its class name, whichever class loader defined it), so
 * the two together wrap a scan once; it leaves the plan untouched when nothing changes, and
 * returns the input plan on any error. The Python callback is one per JVM; a rule of the
 * extension asks the pruning process when no callback is set, and does nothing in a session
 * whose {@code spark.metaindex.enabled} is {@code false}.
 */
public final class MetaIndexRule extends Rule<LogicalPlan> {
    static volatile PruneCallback callback;

    private static final Logger LOG = LoggerFactory.getLogger(MetaIndexRule.class);
    private static final String RULE_CLASS = MetaIndexRule.class.getName();
    private static final AtomicLong PLANS = new AtomicLong();

    /** Session conf that turns the extension's rule off for one session. */
    static final String ENABLED_CONF = "spark.metaindex.enabled";

    private final String session;
    private final boolean fromExtension;

    public MetaIndexRule(String session) {
        this(session, false);
    }

    MetaIndexRule(String session, boolean fromExtension) {
        this.session = session;
        this.fromExtension = fromExtension;
    }

    /** Sets the callback and adds the rule to the session's extra optimizations, once. */
    public static synchronized void install(ExperimentalMethods experimental, String session,
                                            PruneCallback cb) {
        callback = cb;
        List<Rule<LogicalPlan>> rules = SparkCompat.extraOptimizations(experimental);
        for (Rule<LogicalPlan> r : rules) {
            if (r.getClass().getName().equals(RULE_CLASS)) {
                return;
            }
        }
        rules.add(new MetaIndexRule(session));
        experimental.extraOptimizations_$eq(SparkCompat.toSeq(rules));
    }

    /** Removes the rule from the session's extra optimizations; other rules stay. */
    public static synchronized void uninstall(ExperimentalMethods experimental) {
        List<Rule<LogicalPlan>> rules = SparkCompat.extraOptimizations(experimental);
        if (rules.removeIf(r -> r.getClass().getName().equals(RULE_CLASS))) {
            experimental.extraOptimizations_$eq(SparkCompat.toSeq(rules));
        }
    }

    public static boolean isInstalled(ExperimentalMethods experimental) {
        for (Rule<LogicalPlan> r : SparkCompat.extraOptimizations(experimental)) {
            if (r.getClass().getName().equals(RULE_CLASS)) {
                return true;
            }
        }
        return false;
    }

    /** The JVM's Python callback, or null (scans of the extension then use the process). */
    public static PruneCallback currentCallback() {
        return callback;
    }

    /** Replaces (or with null, clears) the JVM's callback without touching any session. */
    public static void setCallback(PruneCallback cb) {
        callback = cb;
    }

    @Override
    public String ruleName() {
        return RULE_CLASS;
    }

    @Override
    public LogicalPlan apply(LogicalPlan plan) {
        if (!fromExtension && callback == null) {
            return plan;
        }
        try {
            LogicalPlan prepared = fromExtension ? DeltaScans.prepareFirst(plan) : plan;
            return walk(prepared, new String[1]);
        } catch (Throwable t) {  // never fail a query: plan without skipping
            LOG.warn("metaindex: the plan is left without skipping", t);
            return plan;
        }
    }

    static boolean enabled(SQLConf conf) {
        return !"false".equalsIgnoreCase(conf.getConfString(ENABLED_CONF, "true").trim());
    }

    private LogicalPlan walk(LogicalPlan plan, String[] planId) {
        if (plan instanceof LogicalRelation) {
            return wrap((LogicalRelation) plan, planId);
        }
        LogicalPlan node = SubqueryPlans.walked(plan, sub -> walk(sub, planId));
        List<LogicalPlan> children = SparkCompat.toList(node.children());
        if (children.isEmpty()) {
            return node;
        }
        List<LogicalPlan> out = new ArrayList<>(children.size());
        boolean changed = false;
        for (LogicalPlan child : children) {
            LogicalPlan now = walk(child, planId);
            changed |= now != child;
            out.add(now);
        }
        return changed ? node.withNewChildren(SparkCompat.toSeq(out)) : node;
    }

    private LogicalPlan wrap(LogicalRelation rel, String[] planId) {
        if (!(rel.relation() instanceof HadoopFsRelation) || rel.isStreaming()) {
            return rel;
        }
        HadoopFsRelation fs = (HadoopFsRelation) rel.relation();
        SQLConf conf = fs.sparkSession().sessionState().conf();
        if (fromExtension && !enabled(conf)) {
            return rel;
        }
        FileIndex location = fs.location();
        boolean delta = DeltaScans.isDeltaScan(fs);
        String format = delta ? "parquet" : formatName(fs.fileFormat());
        if (format == null
                || location.getClass().getName().equals(MetaIndexFileIndex.CLASS_NAME)) {
            return rel;
        }
        if (delta) {
            LogicalPlan withDv;
            try {
                withDv = DeltaScans.withDeletionVectors(rel);
            } catch (ReflectiveOperationException | LinkageError e) {  // Delta's strategy reads it
                LOG.warn("metaindex: a Delta scan is left without skipping", e);
                return rel;
            }
            if (withDv != rel) {
                return walk(withDv, planId);
            }
        }
        if (planId[0] == null) {
            planId[0] = "plan-" + PLANS.incrementAndGet();
        }
        MetaIndexFileIndex wrapper = new MetaIndexFileIndex(location, tableLocation(rel),
                session, planId[0], conf, fs.sparkSession().sparkContext(), fromExtension,
                new MetaIndexFileIndex.Read(format, SparkCompat.javaMap(fs.options()),
                        fs.dataSchema().json()),
                delta ? DeltaScans.version(location) : -1,
                delta ? DeltaScans.filesBeforeSkipping(location) : -1);
        HadoopFsRelation wrapped = fs.copy(wrapper, fs.partitionSchema(), fs.dataSchema(),
                fs.bucketSpec(), fs.fileFormat(), fs.options(), fs.sparkSession());
        LogicalRelation out = SparkCompat.copyRelation(rel, wrapped);
        out.copyTagsFrom(rel);
        return out;
    }

    /** Class names of the file formats scans of which are wrapped (Hive's ORC format by name:
     *  spark-hive may not be on the class path). */
    private static final String HIVE_ORC = "org.apache.spark.sql.hive.orc.OrcFileFormat";

    /**
     * The short name ({@link DataSourceRegister}) of a format whose scans are wrapped: Spark's
     * own Parquet, CSV, JSON and ORC formats, exactly; null for any other (a subclass reads
     * its files its own way, e.g. Delta's Parquet format with deletion vectors).
     */
    static String formatName(FileFormat format) {
        Class<?> c = format.getClass();
        boolean known = c == ParquetFileFormat.class || c == CSVFileFormat.class
                || c == JsonFileFormat.class || c == OrcFileFormat.class
                || c.getName().equals(HIVE_ORC);
        if (!known || !(format instanceof DataSourceRegister)) {
            return null;
        }
        return ((DataSourceRegister) format).shortName();
    }

    private static String tableLocation(LogicalRelation rel) {
        Option<CatalogTable> table = rel.catalogTable();
        if (table.isEmpty()) {
            return null;
        }
        try {
            return table.get().location().toString();
        } catch (RuntimeException e) {  // a table without a location
            return null;
        }
    }
}
