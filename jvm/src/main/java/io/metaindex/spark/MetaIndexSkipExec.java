package io.metaindex.spark;

import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;

import org.apache.spark.SparkContext;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.plans.physical.Partitioning;
import org.apache.spark.sql.execution.FileSourceScanExec;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.metric.SQLMetric;
import org.apache.spark.sql.execution.metric.SQLMetrics;
import org.apache.spark.sql.vectorized.ColumnarBatch;

import scala.collection.immutable.Map;

/**
 * A pass-through node over a file scan whose index {@link MetaIndexFileIndex} wraps, carrying
 * what metaindex skipped as SQL metrics: "{@value #FILES}" ({@value #FILES_KEY}) and
 * "{@value #BYTES}" ({@value #BYTES_KEY}). They show in the SQL UI, the event log and a Spark
 * Connect client's {@code df.executionInfo}, next to the scan's own "number of files read".
 *
 * <p>Rows and columnar batches go through untouched (the node is columnar when its scan is);
 * partitioning and ordering are the scan's. When the scan's RDD is made (its files listed,
 * which is when metaindex prunes), the node reads the index's count and posts it as a driver
 * metric update of the running SQL execution, as Spark does for the scan's own metrics.
 * Inserted by {@link MetaIndexExtensions}'s columnar rule, once per scan.
 */
public final class MetaIndexSkipExec extends SparkCompat.UnaryExec {
    static final String FILES = "files skipped by metaindex";
    static final String BYTES = "size of files skipped by metaindex";
    /** The metrics' keys (what {@code df.executionInfo} of Spark Connect names them). */
    static final String FILES_KEY = "metaindexFilesSkipped";
    static final String BYTES_KEY = "metaindexBytesSkipped";

    private final SparkPlan child;
    private final SQLMetric filesSkipped;
    private final SQLMetric bytesSkipped;
    private final Map<String, SQLMetric> metrics;
    private volatile boolean published;

    public MetaIndexSkipExec(SparkPlan child) {
        this.child = child;
        SparkContext sc = sparkContext();
        this.filesSkipped = SQLMetrics.createMetric(sc, FILES);
        this.bytesSkipped = SQLMetrics.createSizeMetric(sc, BYTES,
                SQLMetrics.createSizeMetric$default$3());
        java.util.Map<String, SQLMetric> byKey = new LinkedHashMap<>();
        byKey.put(FILES_KEY, filesSkipped);
        byKey.put(BYTES_KEY, bytesSkipped);
        this.metrics = SparkCompat.scalaMap(byKey);
    }

    /** Whether {@code plan} is a filtered file scan of a {@link MetaIndexFileIndex}. */
    static boolean wraps(SparkPlan plan) {
        if (!(plan instanceof FileSourceScanExec)) {
            return false;
        }
        FileSourceScanExec scan = (FileSourceScanExec) plan;
        return scan.relation().location().getClass().getName()
                .equals(MetaIndexFileIndex.CLASS_NAME)
                && !(scan.partitionFilters().isEmpty() && scan.dataFilters().isEmpty());
    }

    /** {@code plan} with a node over each filtered scan of a {@link MetaIndexFileIndex} that
     * has none yet. */
    static SparkPlan insert(SparkPlan plan) {
        if (plan instanceof MetaIndexSkipExec) {
            return plan;
        }
        if (wraps(plan)) {
            return new MetaIndexSkipExec(plan);
        }
        List<SparkPlan> children = SparkCompat.toList(plan.children());
        if (children.isEmpty()) {
            return plan;
        }
        List<SparkPlan> out = new java.util.ArrayList<>(children.size());
        boolean changed = false;
        for (SparkPlan c : children) {
            SparkPlan now = insert(c);
            changed |= now != c;
            out.add(now);
        }
        return changed ? plan.withNewChildren(SparkCompat.toSeq(out)) : plan;
    }

    @Override
    public SparkPlan child() {
        return child;
    }

    @Override
    SparkPlan withChild(SparkPlan newChild) {
        return new MetaIndexSkipExec(newChild);
    }

    @Override
    public Map<String, SQLMetric> metrics() {
        return metrics;
    }

    @Override
    public Partitioning outputPartitioning() {
        return child.outputPartitioning();
    }

    @Override
    public boolean supportsColumnar() {
        return child.supportsColumnar();
    }

    @Override
    public RDD<InternalRow> doExecute() {
        RDD<InternalRow> rdd = child.execute();
        publish();
        return rdd;
    }

    @Override
    public RDD<ColumnarBatch> doExecuteColumnar() {
        RDD<ColumnarBatch> rdd = child.executeColumnar();
        publish();
        return rdd;
    }

    /** The scan's files are listed by now: its index's counts become the metrics. */
    private void publish() {
        Object location = ((FileSourceScanExec) child).relation().location();
        if (!(location instanceof MetaIndexFileIndex)) {
            return;  // another class loader's shim: nothing to read
        }
        long[] skipped = ((MetaIndexFileIndex) location).lastSkipped();
        filesSkipped.set(skipped[0]);
        bytesSkipped.set(skipped[1]);
        published = true;
        String execution = sparkContext().getLocalProperty("spark.sql.execution.id");
        if (execution != null) {
            SQLMetrics.postDriverMetricUpdates(sparkContext(), execution,
                    SparkCompat.toSeq(Arrays.asList(filesSkipped, bytesSkipped)));
        }
    }

    @Override
    public String nodeName() {
        return "MetaIndexSkipping";
    }

    /** {@code df.explain("formatted")}: the files skipped, once the scan listed its files. */
    @Override
    public String verboseStringWithOperatorId() {
        StringBuilder out = new StringBuilder("\n").append(formattedNodeName()).append('\n');
        if (published) {
            out.append("Files skipped by metaindex: ").append(filesSkipped.value())
                    .append(" (").append(bytesSkipped.value()).append(" bytes)\n");
        }
        return out.toString();
    }

    @Override
    public int productArity() {
        return 1;
    }

    @Override
    public Object productElement(int n) {
        if (n != 0) {
            throw new IndexOutOfBoundsException(Integer.toString(n));
        }
        return child;
    }

    @Override
    public boolean canEqual(Object other) {
        return other instanceof MetaIndexSkipExec;
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof MetaIndexSkipExec
                && child.equals(((MetaIndexSkipExec) other).child);
    }

    @Override
    public int hashCode() {
        return 31 * child.hashCode() + 7;
    }
}
