package io.metaindex.spark;

import java.lang.reflect.Method;

import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.execution.datasources.FileIndex;
import org.apache.spark.sql.execution.datasources.HadoopFsRelation;
import org.apache.spark.sql.execution.datasources.LogicalRelation;

import scala.Option;

/**
 * Delta Lake scans, recognised by class name (the jar has no compile-time dependency on Delta).
 *
 * <p>Only a plain read is wrapped: a {@code DeltaParquetFileFormat} relation whose index is the
 * {@code PreparedDeltaFileIndex} Delta's own {@code PrepareDeltaScan} rule made (its data
 * skipping already done; a time-travel read is one too, pinned to its version). Delta's other
 * indexes are left alone: {@code TahoeLogFileIndex} (not yet prepared: wrapping it would hide it
 * from {@code PrepareDeltaScan} and from the deletion-vector strategy), {@code TahoeBatchFileIndex}
 * (the touched files DELETE / UPDATE / MERGE rewrite, and OPTIMIZE's inputs), and the change-data
 * indexes ({@code TahoeChangeFileIndex}, {@code TahoeRemoveFileIndex}, {@code CdcAddFileIndex}).
 *
 * <p>Delta reads deletion vectors through a planner strategy that only recognises its own
 * index; so before wrapping, {@link #withDeletionVectors} applies Delta's rewrite itself (a
 * filter on the row-deleted column over a scan that produces it), exactly as the strategy would.
 *
 * <p>{@code PrepareDeltaScan} and the extension's rule are both pre-CBO rules, run in the order
 * of {@code spark.sql.extensions}. Where ours is listed first, {@link #prepareFirst} runs
 * Delta's rule on the plan before ours, so the order of the two extensions does not matter.
 */
final class DeltaScans {
    static final String FORMAT = "org.apache.spark.sql.delta.DeltaParquetFileFormat";
    static final String READ_INDEX = "org.apache.spark.sql.delta.stats.PreparedDeltaFileIndex";
    static final String LOG_INDEX = "org.apache.spark.sql.delta.files.TahoeLogFileIndex";
    static final String PREPARE_RULE = "org.apache.spark.sql.delta.stats.PrepareDeltaScan";
    private static final String DV_SCAN = "org.apache.spark.sql.delta.ScanWithDeletionVectors$";

    private DeltaScans() {
    }

    /** Whether {@code fs} is a plain Delta read, after Delta's own data skipping. */
    static boolean isDeltaScan(HadoopFsRelation fs) {
        return fs.fileFormat().getClass().getName().equals(FORMAT)
                && fs.location().getClass().getName().equals(READ_INDEX);
    }

    /**
     * {@code plan} with Delta's {@code PrepareDeltaScan} applied, when it holds a Delta read
     * that rule has not prepared yet and the session's pre-CBO rules run it after the
     * extension's rule ({@code spark.sql.extensions} listing ours before Delta's): its data
     * skipping is then done before ours, as in the other order, and when its own turn comes
     * it finds nothing left to prepare. {@code plan} itself otherwise (Delta's rule ran
     * already, the session has none, or its {@code spark.metaindex.enabled} is false).
     */
    static LogicalPlan prepareFirst(LogicalPlan plan) {
        HadoopFsRelation fs = unprepared(plan);
        if (fs == null || !MetaIndexRule.enabled(fs.sparkSession().sessionState().conf())) {
            return plan;
        }
        boolean oursSeen = false;
        for (Rule<LogicalPlan> rule
                : SparkCompat.toList(fs.sparkSession().sessionState().optimizer().preCBORules())) {
            String name = rule.getClass().getName();
            if (name.equals(MetaIndexRule.class.getName())) {
                oursSeen = true;
            } else if (oursSeen && name.equals(PREPARE_RULE)) {
                return rule.apply(plan);
            }
        }
        return plan;
    }

    /** The first Delta read of {@code plan} (its subqueries' included) not yet prepared by
     * Delta, or null. */
    private static HadoopFsRelation unprepared(LogicalPlan plan) {
        if (plan instanceof LogicalRelation) {
            Object relation = ((LogicalRelation) plan).relation();
            if (relation instanceof HadoopFsRelation) {
                HadoopFsRelation fs = (HadoopFsRelation) relation;
                if (fs.fileFormat().getClass().getName().equals(FORMAT)
                        && fs.location().getClass().getName().equals(LOG_INDEX)) {
                    return fs;
                }
            }
            return null;
        }
        for (LogicalPlan child : SparkCompat.toList(plan.children())) {
            HadoopFsRelation fs = unprepared(child);
            if (fs != null) {
                return fs;
            }
        }
        for (LogicalPlan sub : SparkCompat.toList(plan.subqueries())) {
            HadoopFsRelation fs = unprepared(sub);
            if (fs != null) {
                return fs;
            }
        }
        return null;
    }

    /** The scan with Delta's deletion-vector rewrite applied (Project over Filter over the
     * relation), or {@code rel} itself when it needs none (no file has a deletion vector, or
     * the rewrite was done). Throws when the rewrite cannot be applied: the caller then leaves
     * the scan unwrapped, for Delta's strategy to rewrite. */
    static LogicalPlan withDeletionVectors(LogicalRelation rel) throws ReflectiveOperationException {
        ClassLoader delta = ((HadoopFsRelation) rel.relation()).fileFormat().getClass()
                .getClassLoader();
        Class<?> dv = Class.forName(DV_SCAN, true, delta);
        Object module = dv.getField("MODULE$").get(null);
        Method unapply = dv.getMethod("unapply", LogicalRelation.class);
        Option<?> rewritten = (Option<?>) unapply.invoke(module, rel);
        return rewritten.isEmpty() ? rel : (LogicalPlan) rewritten.get();
    }

    /** The Delta version the scan reads (its snapshot: a time-travel read's version), or -1. */
    static long version(FileIndex index) {
        try {
            return ((Number) index.getClass().getMethod("version").invoke(index)).longValue();
        } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
            return -1;
        }
    }

    /** The files of the scanned snapshot before Delta's data skipping, or -1 when unknown. */
    static long filesBeforeSkipping(FileIndex index) {
        try {
            Object scan = index.getClass().getMethod("preparedScan").invoke(index);
            Object total = scan.getClass().getMethod("total").invoke(scan);
            Option<?> files = (Option<?>) total.getClass().getMethod("files").invoke(total);
            return files.isEmpty() ? -1 : ((Number) files.get()).longValue();
        } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
            return -1;
        }
    }
}
