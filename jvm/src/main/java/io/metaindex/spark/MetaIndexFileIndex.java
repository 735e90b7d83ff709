package io.metaindex.spark;

import java.net.URI;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.hadoop.fs.Path;
import org.apache.spark.SparkContext;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.execution.datasources.FileIndex;
import org.apache.spark.sql.execution.datasources.FileStatusWithMetadata;
import org.apache.spark.sql.execution.datasources.PartitionDirectory;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.StructType;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import scala.Option;

/**
 * A {@link FileIndex} that lists through its delegate, then drops the files the Python side
 * proves cannot match the scan's filters: the py4j callback of a PySpark driver that called
 * {@code enable(spark)}, else (for scans wrapped by {@link MetaIndexExtensions}) the pruning
 * process.
 *
 * <p>Only a file whose decoded path, length and modification time all equal a line of the
 * reply is dropped: a file rewritten since it was indexed is read. Any failure on the way
 * returns the delegate's listing unchanged. Every filtered listing files its stats (what was
 * listed and dropped, the reply's stats line, or why nothing was) in {@link ScanStatsRegistry},
 * and keeps its skipped count for the plan's {@link MetaIndexSkipExec}. Equality and hash code are the delegate's, so scans
 * of one relation still compare equal (exchange reuse, plan caching).
 */
public final class MetaIndexFileIndex extends SparkCompat.ListingIndex {
    private static final String[] SESSION_KEYS = {
        "spark.sql.session.timeZone", "spark.sql.caseSensitive",
        "spark.sql.parquet.datetimeRebaseModeInRead", "spark.sql.parquet.int96RebaseModeInRead"};
    /** Session conf sent with each request by prefix: metaindex's own, and the S3A settings
     *  (endpoint, keys, ...) metaindex reads an s3a:// table's index with. */
    private static final String[] SENT_PREFIXES = {
        "metaindex.", "spark.metaindex.", "fs.s3a.", "spark.hadoop.fs.s3a."};

    static final String CLASS_NAME = MetaIndexFileIndex.class.getName();
    private static final Logger LOG = LoggerFactory.getLogger(MetaIndexFileIndex.class);
    private static final AtomicLong SCANS = new AtomicLong();
    /** Roots sent per request: a table root is one path; many roots (globs) are no table. */
    private static final int MAX_ROOTS = 16;

    private final FileIndex delegate;
    private final String table;
    private final String session;
    private final String planId;
    private final transient SQLConf conf;
    private final transient SparkContext context;
    private final boolean processFallback;
    private final Read read;
    /** A Delta scan's snapshot version and its file count before Delta's skipping (-1: none,
     * unknown): sent with each request (the stats say what Delta skipped). */
    private final long deltaVersion;
    private final long deltaFilesTotal;
    private transient volatile long[] lastSkipped;

    /** How the scan reads its files: the format's short name, the relation's reader options
     *  and its data schema (JSON), sent with each request. */
    static final class Read implements java.io.Serializable {
        private static final long serialVersionUID = 1L;
        final String format;
        final Map<String, String> options;
        final String dataSchema;

        Read(String format, Map<String, String> options, String dataSchema) {
            this.format = format;
            this.options = new java.util.TreeMap<>(options);
            this.dataSchema = dataSchema;
        }
    }

    MetaIndexFileIndex(FileIndex delegate, String table, String session, String planId,
                       SQLConf conf, SparkContext context, boolean processFallback,
                       Read read, long deltaVersion, long deltaFilesTotal) {
        this.read = read;
        this.deltaVersion = deltaVersion;
        this.deltaFilesTotal = deltaFilesTotal;
        this.delegate = delegate;
        this.table = table;
        this.session = session;
        this.planId = planId;
        this.conf = conf;
        this.context = context;
        this.processFallback = processFallback;
    }

    public FileIndex delegate() {
        return delegate;
    }

    @Override
    List<Path> roots() {
        return SparkCompat.toList(delegate.rootPaths());
    }

    @Override
    List<PartitionDirectory> listPartitions(List<Expression> partitionFilters,
                                            List<Expression> dataFilters) {
        List<PartitionDirectory> listed = SparkCompat.toList(delegate.listFiles(
                SparkCompat.toSeq(partitionFilters), SparkCompat.toSeq(dataFilters)));
        if (partitionFilters.isEmpty() && dataFilters.isEmpty()) {
            return listed;
        }
        PruneCallback callback = MetaIndexRule.callback;
        if (callback == null && processFallback && context != null) {
            callback = PruningProcess.shared(context.getConf());
        }
        if (callback == null) {
            return listed;
        }
        long numFiles = 0;
        long numBytes = 0;
        for (PartitionDirectory d : listed) {
            for (FileStatusWithMetadata f : SparkCompat.toList(d.files())) {
                numFiles++;
                numBytes += f.getLen();
            }
        }
        if (numFiles == 0) {
            return listed;
        }
        String query = queryId();
        try {
            return prune(callback, listed, partitionFilters, dataFilters, query, numFiles,
                    numBytes);
        } catch (Throwable t) {  // never fail a query: read every file instead
            LOG.warn("metaindex: skipping is off for this scan of {}", rootPaths(), t);
            record(query, numFiles, numBytes, 0, 0, "the metaindex shim failed (" + t + ")",
                    null);
            return listed;
        }
    }

    /** Files skipped and their bytes in this index's latest pruned listing ({0, 0} before
     * any): what {@link MetaIndexSkipExec} shows in the plan's metrics. */
    long[] lastSkipped() {
        long[] last = lastSkipped;
        return last == null ? new long[2] : last.clone();
    }

    /** The SQL execution id when one runs (an action), else the plan id: the stats' query. */
    private String queryId() {
        String execution = context == null ? null
                : context.getLocalProperty("spark.sql.execution.id");
        return execution != null ? execution : planId;
    }

    private void record(String query, long numFiles, long numBytes, long dropped,
                        long droppedBytes, String reason, String detail) {
        lastSkipped = new long[] {dropped, droppedBytes};
        String shown = table;
        if (shown == null) {
            List<Path> roots = roots();
            shown = roots.isEmpty() ? null : roots.get(0).toUri().toString();
        }
        ScanStatsRegistry.record(session, query, shown, numFiles, numBytes, dropped,
                droppedBytes, reason, detail);
    }

    private List<PartitionDirectory> prune(PruneCallback callback,
                                           List<PartitionDirectory> listed,
                                           List<Expression> partitionFilters,
                                           List<Expression> dataFilters, String query,
                                           long numFiles, long numBytes) {
        long scan = SCANS.incrementAndGet();
        String reply = callback.prune(request(scan, partitionFilters, dataFilters, numFiles,
                numBytes, query));
        // a first line of JSON: the pruning side's stats of the scan
        String detail = null;
        if (reply != null && reply.startsWith("{")) {
            int nl = reply.indexOf('\n');
            detail = nl < 0 ? reply : reply.substring(0, nl);
            reply = nl < 0 ? "" : reply.substring(nl + 1);
            if (!detail.endsWith("}")) {
                detail = null;
            }
        }
        if (reply == null || !reply.startsWith("OK\t")) {
            record(query, numFiles, numBytes, 0, 0, detail != null ? null
                    : "the pruning side answered " + (reply == null ? "nothing" : "NONE"),
                    detail);
            return listed;
        }
        int eol = reply.indexOf('\n');
        String root = eol < 0 ? reply.substring(3) : reply.substring(3, eol);
        if (eol < 0 || eol == reply.length() - 1) {
            record(query, numFiles, numBytes, 0, 0, null, detail);
            return listed;  // nothing to drop
        }
        Map<String, long[]> skippable = parseLines(reply, eol + 1);
        URI rootUri = URI.create(root);
        String prefix = rootUri.getPath();
        prefix = prefix.endsWith("/") ? prefix : prefix + "/";
        List<PartitionDirectory> out = new ArrayList<>(listed.size());
        long dropped = 0;
        long droppedBytes = 0;
        for (PartitionDirectory d : listed) {
            List<FileStatusWithMetadata> files = SparkCompat.toList(d.files());
            List<FileStatusWithMetadata> kept = new ArrayList<>(files.size());
            for (FileStatusWithMetadata f : files) {
                if (provenSkippable(f, rootUri, prefix, skippable)) {
                    dropped++;
                    droppedBytes += f.getLen();
                } else {
                    kept.add(f);
                }
            }
            out.add(kept.size() == files.size() ? d
                    : d.copy(d.values(), SparkCompat.toSeq(kept)));
        }
        record(query, numFiles, numBytes, dropped, droppedBytes, null, detail);
        StringBuilder rep = new StringBuilder(96);
        rep.append("{\"scan\":").append(scan).append(",\"files_skipped\":").append(dropped)
                .append(",\"bytes_skipped\":").append(droppedBytes).append('}');
        callback.report(rep.toString());
        return dropped == 0 ? listed : out;
    }

    private static Map<String, long[]> parseLines(String reply, int from) {
        Map<String, long[]> out = new HashMap<>();
        int at = from;
        int n = reply.length();
        while (at < n) {
            int end = reply.indexOf('\n', at);
            if (end < 0) {
                end = n;
            }
            int t1 = reply.indexOf('\t', at);
            int t2 = t1 < 0 ? -1 : reply.indexOf('\t', t1 + 1);
            if (t1 < 0 || t2 < 0 || t2 >= end) {
                throw new IllegalArgumentException("malformed reply line at " + at);
            }
            long size = Long.parseLong(reply.substring(at, t1));
            long mtime = Long.parseLong(reply.substring(t1 + 1, t2));
            out.put(reply.substring(t2 + 1, end), new long[] {size, mtime});
            at = end + 1;
        }
        return out;
    }

    private static boolean provenSkippable(FileStatusWithMetadata f, URI root, String prefix,
                                           Map<String, long[]> skippable) {
        URI uri = f.getPath().toUri();
        if (root.getScheme() != null && uri.getScheme() != null
                && !root.getScheme().equalsIgnoreCase(uri.getScheme())) {
            return false;
        }
        String ra = root.getAuthority() == null ? "" : root.getAuthority();
        String fa = uri.getAuthority() == null ? "" : uri.getAuthority();
        if (!ra.equals(fa)) {
            return false;
        }
        String path = uri.getPath();
        if (path == null || !path.startsWith(prefix)) {
            return false;
        }
        long[] entry = skippable.get(path.substring(prefix.length()));
        return entry != null && entry[0] == f.getLen() && entry[1] == f.getModificationTime();
    }

    private static boolean sent(String key) {
        for (String prefix : SENT_PREFIXES) {
            if (key.startsWith(prefix)) {
                return true;
            }
        }
        return false;
    }

    /** Appends {@code "key":"value"} to a JSON object ({@code first}: no comma before it);
     *  returns false, the next member's {@code first}. */
    private static boolean member(StringBuilder out, boolean first, String key, String value) {
        if (!first) {
            out.append(',');
        }
        FilterJson.string(out, key);
        out.append(':');
        FilterJson.string(out, value);
        return false;
    }

    private String request(long scan, List<Expression> partitionFilters,
                           List<Expression> dataFilters, long numFiles, long numBytes,
                           String query) {
        StringBuilder out = new StringBuilder(512);
        out.append("{\"scan\":").append(scan).append(",\"session\":");
        FilterJson.string(out, session);
        out.append(",\"roots\":[");
        List<Path> roots = roots();
        for (int i = 0; i < Math.min(roots.size(), MAX_ROOTS); i++) {
            if (i > 0) {
                out.append(',');
            }
            FilterJson.string(out, roots.get(i).toUri().toString());
        }
        out.append("],\"table\":");
        if (table == null) {
            out.append("null");
        } else {
            FilterJson.string(out, table);
        }
        List<Expression> filters = new ArrayList<>(partitionFilters);
        filters.addAll(dataFilters);
        out.append(",\"filters\":");
        FilterJson.writeAll(out, filters);
        out.append(",\"partition_filters\":").append(partitionFilters.size());
        out.append(",\"num_files\":").append(numFiles).append(",\"num_bytes\":").append(numBytes);
        if (deltaVersion >= 0) {
            out.append(",\"delta_version\":").append(deltaVersion);
        }
        if (deltaFilesTotal >= 0) {
            out.append(",\"delta_files_total\":").append(deltaFilesTotal);
        }
        out.append(",\"query\":");
        FilterJson.string(out, query);
        if (read != null) {
            out.append(",\"format\":");
            FilterJson.string(out, read.format);
            out.append(",\"data_schema\":");
            FilterJson.string(out, read.dataSchema);
            out.append(",\"options\":{");
            boolean firstOption = true;
            for (Map.Entry<String, String> e : read.options.entrySet()) {
                firstOption = member(out, firstOption, e.getKey(), e.getValue());
            }
            out.append('}');
        }
        out.append(",\"conf\":{");
        boolean first = true;
        if (conf != null) {
            Map<String, String> all = SparkCompat.javaMap(conf.getAllConfs());
            for (Map.Entry<String, String> e : all.entrySet()) {
                if (sent(e.getKey())) {
                    first = member(out, first, e.getKey(), e.getValue());
                }
            }
            // what the filters mean depends on these (defaults included)
            for (String key : SESSION_KEYS) {
                String value;
                try {
                    value = conf.getConfString(key);
                } catch (RuntimeException unset) {
                    continue;
                }
                first = member(out, first, key, value);
            }
        }
        out.append("}}");
        return out.toString();
    }

    @Override
    public String[] inputFiles() {
        return delegate.inputFiles();
    }

    @Override
    public void refresh() {
        delegate.refresh();
    }

    @Override
    public long sizeInBytes() {
        return delegate.sizeInBytes();
    }

    @Override
    public StructType partitionSchema() {
        return delegate.partitionSchema();
    }

    /** The delegate's (Spark 4.3 on; not an override on earlier lines, where it is unused). */
    public boolean isTimeTravel() {
        return SparkCompat.isTimeTravel(delegate);
    }

    @Override
    public Option<Object> metadataOpsTimeNs() {
        return delegate.metadataOpsTimeNs();
    }

    @Override
    public boolean equals(Object other) {
        if (this == other) {
            return true;
        }
        return other instanceof MetaIndexFileIndex
                && delegate.equals(((MetaIndexFileIndex) other).delegate);
    }

    @Override
    public int hashCode() {
        return delegate.hashCode();
    }

    @Override
    public String toString() {
        return "MetaIndexFileIndex(" + delegate + ")";
    }
}
