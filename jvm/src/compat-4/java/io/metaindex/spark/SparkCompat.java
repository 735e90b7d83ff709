package io.metaindex.spark;

import java.lang.reflect.Method;
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
import org.apache.spark.sql.types.StringType;

import scala.collection.immutable.IndexedSeq;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.AbstractFunction1;

/**
 * Where the Spark 4 lines (Scala 2.13) differ from Spark 3.5 (Scala 2.12): the one class of the
 * shim compiled per line group (this file for 4.0, 4.1, 4.2 and the 4.3 that the 4.2 jar
 * serves; {@code src/compat-3.5} for 3.5). Every other class names no Scala collection type
 * and no member that differs between lines; each line's jar compiles them with its own
 * {@code SparkCompat}.
 *
 * <p>What differs: the Scala collection types in Spark's signatures ({@code Seq} is
 * {@code scala.collection.immutable.Seq} here, {@code scala.collection.Seq} on 2.12) and the
 * converters between them and Java's; members added after 3.5 ({@code LogicalRelation}'s
 * {@code stream}, collations of {@code StringType}, {@code FileIndex.isTimeTravel} of 4.3).
 */
final class SparkCompat {
    private SparkCompat() {
    }

    /** The Scala binary version this line's Spark is built with. */
    static final String SCALA = "2.13";

    // ------------------------------------------------------------------ collections

    /** A Scala collection as a (read-only view or copy of a) Java list. */
    static <T> List<T> toList(scala.collection.Iterable<T> items) {
        return new ArrayList<>(CollectionConverters.asJavaCollection(items));
    }

    /** A Java list as the Scala {@code Seq} Spark's signatures take. */
    static <T> Seq<T> toSeq(List<T> items) {
        return CollectionConverters.asScala(items).toList();
    }

    /** A Scala map as a Java map. */
    static <K, V> java.util.Map<K, V> javaMap(scala.collection.Map<K, V> map) {
        return CollectionConverters.asJava(map);
    }

    /** A Java map as Scala's immutable map. */
    static <K, V> scala.collection.immutable.Map<K, V> scalaMap(java.util.Map<K, V> map) {
        return scala.collection.immutable.Map$.MODULE$.from(CollectionConverters.asScala(map));
    }

    // ------------------------------------------------------------------ members

    /** The session's rules in {@code experimental().extraOptimizations()}. */
    static List<org.apache.spark.sql.catalyst.rules.Rule<
            org.apache.spark.sql.catalyst.plans.logical.LogicalPlan>> extraOptimizations(
            org.apache.spark.sql.ExperimentalMethods experimental) {
        return toList(experimental.extraOptimizations());
    }

    /** The classic session's UUID ({@code sessionUUID()}, on the classic session class). */
    static String sessionId(SparkSession session) {
        try {
            return String.valueOf(session.getClass().getMethod("sessionUUID").invoke(session));
        } catch (ReflectiveOperationException | RuntimeException e) {
            return java.util.UUID.randomUUID().toString();
        }
    }

    /** {@code rel.copy(relation = wrapped)}. */
    static LogicalRelation copyRelation(LogicalRelation rel, HadoopFsRelation wrapped) {
        return rel.copy(wrapped, rel.output(), rel.catalogTable(), rel.isStreaming(),
                rel.stream());
    }

    /** False for a string type with a collation other than UTF8_BINARY (its comparisons are
     * not byte-wise); true for every other type. */
    static boolean binaryCollation(DataType t) {
        return !(t instanceof StringType) || ((StringType) t).isUTF8BinaryCollation();
    }

    private static final Method IS_TIME_TRAVEL = timeTravelMethod();

    private static Method timeTravelMethod() {
        try {
            return FileIndex.class.getMethod("isTimeTravel");  // Spark 4.3 on
        } catch (NoSuchMethodException e) {
            return null;
        }
    }

    /** {@code index.isTimeTravel()} where this Spark has it (4.3 on), else false. */
    static boolean isTimeTravel(FileIndex index) {
        if (IS_TIME_TRAVEL == null) {
            return false;
        }
        try {
            return (Boolean) IS_TIME_TRAVEL.invoke(index);
        } catch (ReflectiveOperationException e) {
            return false;
        }
    }

    /** The process id of a child process. */
    static long pid(Process process) {
        return process.pid();
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
