package io.metaindex.spark;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The JVM's record of what skipping did, per Spark session and query: one JSON object per
 * filtered scan a {@link MetaIndexFileIndex} listed, whichever side answered its prune request
 * (the py4j callback of a PySpark driver or the pruning process). Read by the SQL function
 * {@value #FUNCTION} that {@link MetaIndexExtensions} injects, so that
 * {@code last_query_stats(spark)} works where Python has no record: a Spark Connect client, or
 * scans pruned by the pruning process.
 *
 * <p>Bounded: the last {@value #MAX_SESSIONS} sessions that scanned, each with its last
 * {@value #MAX_QUERIES} queries and at most {@value #MAX_SCANS} scans (its oldest queries go
 * first; a query's scans beyond that are not filed).
 * A scan's record is {@code {"table", "query", "files_total", "bytes_total", "files_skipped",
 * "bytes_skipped", "reason", "detail"}}: the counts are what the shim listed and really
 * dropped, {@code reason} the shim's own (the pruning side gave no answer) or null, and
 * {@code detail} the pruning side's stats line (JSON, or null).
 */
final class ScanStatsRegistry {
    static final String FUNCTION = "metaindex_last_query_stats";
    static final int MAX_SESSIONS = 256;
    static final int MAX_QUERIES = 100;
    static final int MAX_SCANS = 256;

    /** session -> (query -> scan records); both in order of last use, oldest first. */
    private static final LinkedHashMap<String, LinkedHashMap<String, List<String>>> SESSIONS =
            new LinkedHashMap<String, LinkedHashMap<String, List<String>>>(16, 0.75f, true) {
                @Override
                protected boolean removeEldestEntry(
                        Map.Entry<String, LinkedHashMap<String, List<String>>> eldest) {
                    return size() > MAX_SESSIONS;
                }
            };

    private ScanStatsRegistry() {
    }

    /** Files one scan's record under its session and query (the query becomes the newest). */
    static void record(String session, String query, String table, long filesTotal,
                       long bytesTotal, long filesSkipped, long bytesSkipped, String reason,
                       String detail) {
        StringBuilder out = new StringBuilder(256 + (detail == null ? 0 : detail.length()));
        out.append("{\"table\":");
        nullable(out, table);
        out.append(",\"query\":");
        nullable(out, query);
        out.append(",\"files_total\":").append(filesTotal)
                .append(",\"bytes_total\":").append(bytesTotal)
                .append(",\"files_skipped\":").append(filesSkipped)
                .append(",\"bytes_skipped\":").append(bytesSkipped)
                .append(",\"reason\":");
        nullable(out, reason);
        out.append(",\"detail\":").append(detail == null ? "null" : detail).append('}');
        String scan = out.toString();
        synchronized (SESSIONS) {
            LinkedHashMap<String, List<String>> queries =
                    SESSIONS.computeIfAbsent(session, k -> new LinkedHashMap<>());
            List<String> scans = queries.remove(query);
            if (scans == null) {
                scans = new ArrayList<>();
            }
            if (scans.size() < MAX_SCANS) {
                scans.add(scan);
            }
            queries.put(query, scans);  // now the newest
            int filed = 0;
            for (List<String> q : queries.values()) {
                filed += q.size();
            }
            Iterator<List<String>> oldest = queries.values().iterator();
            while (queries.size() > 1 && (queries.size() > MAX_QUERIES || filed > MAX_SCANS)) {
                filed -= oldest.next().size();
                oldest.remove();
            }
        }
    }

    /** {@code {"session", "query", "scans": [...]}} of the session's newest query, or null. */
    static String lastQuery(String session) {
        String query;
        List<String> scans;
        synchronized (SESSIONS) {
            LinkedHashMap<String, List<String>> queries = SESSIONS.get(session);
            if (queries == null || queries.isEmpty()) {
                return null;
            }
            Map.Entry<String, List<String>> last = null;
            for (Map.Entry<String, List<String>> e : queries.entrySet()) {
                last = e;
            }
            query = last.getKey();
            scans = new ArrayList<>(last.getValue());
        }
        StringBuilder out = new StringBuilder(256);
        out.append("{\"session\":");
        FilterJson.string(out, session);
        out.append(",\"query\":");
        FilterJson.string(out, query);
        out.append(",\"scans\":[").append(String.join(",", scans)).append("]}");
        return out.toString();
    }

    private static void nullable(StringBuilder out, String s) {
        if (s == null) {
            out.append("null");
        } else {
            FilterJson.string(out, s);
        }
    }

    /** Forgets the session's record. */
    static void clear(String session) {
        synchronized (SESSIONS) {
            SESSIONS.remove(session);
        }
    }
}
