package io.metaindex.spark;

/**
 * The Python side of automatic skipping, implemented by {@code metaindex.spark.hook} through a
 * py4j callback proxy.
 *
 * <p>{@link #prune} receives a small JSON request (table roots, the scan's filters as JSON,
 * counts; never a file list) and answers a first line holding the scan's stats as a JSON object
 * (optional: a reply that does not start with <code>{</code> has none), then {@code NONE} or
 * {@code OK\t<root>} followed by one line per file that provably cannot match:
 * {@code <size>\t<mtime_ms>\t<path relative to root>}.
 * {@link #report} tells Python how many of those files were really dropped (a file whose
 * length or modification time changed since indexing is kept); it is called only after an
 * {@code OK} reply that listed files.
 */
public interface PruneCallback {
    String prune(String request);

    void report(String report);
}
