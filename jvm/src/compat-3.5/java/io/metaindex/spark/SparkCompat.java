package io.metaindex.spark;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.SortOrder;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.datasources.FileIndex;
import org.apache.spark.sql.execution.datasources.HadoopFsRelation;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
import org.apache.spark.sql.execution.datasources.PartitionDirectory;
import org.apache.spark.sql.types.DataType;

import scala.collection.IndexedSeq;
import scala.collection.JavaConverters;
import scala.collection.Seq;
import scala.runtime.AbstractFunction1;

/**
 * Where Spark 3.5 (Scala 2.12, Java 8) differs from the Spark 4 lines: the one class of the shim
 * compiled per line group (this file for 3.5; {@code src/compat-4} for 4.x), with the same
 * members as the other. Every other class names no Scala collection type and no member that
 * differs between lines, and uses nothing past Java 8.
 *
 * <p>What differs: {@code Seq} and {@code IndexedSeq} in Spark's signatures are
 * {@code scala.collection.*} here ({@code scala.collection.immutable.*} on 2.13), converted with
 * {@code JavaConverters}; {@code LogicalRelation} has no {@code stream}; strings have no
 * collations; no {@code FileIndex.isTimeTravel}; {@code Process.pid()} only where the JVM is
 * Java 9 or newer.
 */
final class SparkCompat {
    private SparkCompat() {
    }

    /** The Scala binary version this line's Spark is built with. */
    static final String SCALA = "2.12";

    // ------------------------------------------------------------------ collections

    /** A Scala collection as a (read-only view or copy of a) Java list. */
    static <T> List<T> toList(scala.collection.Iterable<T> items) {
        return new ArrayList<>(JavaConverters.asJavaCollection(items));
    }

    /** A Java list as the Scala {@code Seq} Spark's signatures take. */
    static <T> Seq<T> toSeq(List<T> items) {
        return JavaConverters.asScalaBuffer(items).toList();
    }

    /** A Scala map as a Java map. */
    static <K, V> java.util.Map<K, V> javaMap(scala.collection.Map<K, V> map) {
        return JavaConverters.mapAsJavaMap(map);
    }

    /** A Java map as Scala's immutable map. */
    static <K, V> scala.collection.immutable.Map<K, V> scalaMap(java.util.Map<K, V> map) {
        scala.collection.immutable.Map<K, V> out = scala.collection.immutable.Map$.MODULE$.empty();
        for (java.util.Map.Entry<K, V> e : map.entrySet()) {
            out = out.updated(e.getKey(), e.getValue());
        }
        return out;
    }

    // ------------------------------------------------------------------ members

    /** The session's rules in {@code experimental().extraOptimizations()}. */
    static List<org.apache.spark.sql.catalyst.rules.Rule<
            org.apache.spark.sql.catalyst.plans.logical.LogicalPlan>> extraOptimizations(
            org.apache.spark.sql.ExperimentalMethods experimental) {
        return toList(experimental.extraOptimizations());
    }

    /** The session's UUID. */
    static String sessionId(SparkSession session) {
        return session.sessionUUID();
    }

    /** {@code rel.copy(relation = wrapped)}. */
    static LogicalRelation copyRelation(LogicalRelation rel, HadoopFsRelation wrapped) {
        return rel.copy(wrapped, rel.output(), rel.catalogTable(), rel.isStreaming());
    }

    /** True: strings have no collations before Spark 4 (they always compare as bytes). */
    static boolean binaryCollation(DataType t) {
        return true;
    }

    /** False: no time travel through a {@code FileIndex} before Spark 4.3. */
    static boolean isTimeTravel(FileIndex index) {
        return false;
    }

    /** The process id of a child process where the JVM tells it (Java 9 on), else -1. */
    static long pid(Process process) {
        try {
            return (Long) Process.class.getMethod("pid").invoke(process);
        } catch (ReflectiveOperationException | RuntimeException e) {
            return -1;
        }
    }

    // ------------------------------------------------------------------ shapes

    /** A {@link FileIndex} whose two Seq-typed members are given as Java lists. */
    abstract static class ListingIndex implements FileIndex {
        /** The index's root paths. */
        abstract List<Path> roots();

        /** The partitions and their files that the scan reads. */
        abstract List<PartitionDirectory> listPartitions(List<Expression> partitionFilters,
                                                         List<Expression> dataFilters);

        @Override
        public final Seq<Path> rootPaths() {
            return toSeq(roots());
        }

        @Override
        public final Seq<PartitionDirectory> listFiles(Seq<Expression> partitionFilters,
                                                       Seq<Expression> dataFilters) {
            return toSeq(listPartitions(toList(partitionFilters), toList(dataFilters)));
        }
    }

    /** A physical node with one child whose output, ordering and partitioning are the
     * child's. */
    abstract static class UnaryExec extends SparkPlan {
        /** The only child. */
        public abstract SparkPlan child();

        /** This node over another child. */
        abstract SparkPlan withChild(SparkPlan child);

        @Override
        public final Seq<Attribute> output() {
            return child().output();
        }

        @Override
        public final Seq<SparkPlan> children() {
            return toSeq(Collections.singletonList(child()));
        }

        @Override
        public final SparkPlan withNewChildrenInternal(IndexedSeq<SparkPlan> newChildren) {
            return withChild(newChildren.apply(0));
        }

        @Override
        public final Seq<SortOrder> outputOrdering() {
            return child().outputOrdering();
        }
    }

    /** The builder of a SQL function, given its arguments as a Java list. */
    abstract static class FunctionBuilder extends AbstractFunction1<Seq<Expression>, Expression> {
        abstract Expression build(List<Expression> args);

        @Override
        public final Expression apply(Seq<Expression> args) {
            return build(toList(args));
        }
    }
}
