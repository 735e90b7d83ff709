package io.metaindex.spark;

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.spark.SparkConf;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The pruning process: {@code python -m metaindex.spark.pruned}, started on first use and
 * supervised by this JVM, answering the same requests as the py4j callback. The wire protocol is
 * {@code specs/pruning-protocol.md} (version {@value #PROTOCOL}): frames of a header line
 * {@code <kind> <id> <length>\n} and {@code length} bytes of UTF-8 payload, over the process's
 * stdin and stdout; its stderr goes to this JVM's log.
 *
 * <p>Never fails a query: a process that cannot start, answers late, is busy or dies makes the
 * scan read every file ({@code NONE}), and the reason is logged and is the reason of the scan's
 * stats. At most
 * {@code spark.metaindex.pruned.maxPending} requests wait at once (the bounded queue); a request
 * beyond that is not sent. A process that does not answer in time is killed. A process that
 * exited is started again by the next request; one that could not start is not tried again for
 * {@code spark.metaindex.pruned.retryAfter}.
 */
public final class PruningProcess implements PruneCallback {
    /** The protocol version this client speaks. */
    public static final int PROTOCOL = 2;

    static final String PYTHON_CONF = "spark.metaindex.python";
    static final String TIMEOUT_CONF = "spark.metaindex.pruned.timeout";
    static final String START_TIMEOUT_CONF = "spark.metaindex.pruned.startTimeout";
    static final String MAX_PENDING_CONF = "spark.metaindex.pruned.maxPending";
    static final String RETRY_CONF = "spark.metaindex.pruned.retryAfter";
    private static final int MAX_HEADER = 64;
    private static final int MAX_PAYLOAD = 1 << 30;

    private static final Logger LOG = LoggerFactory.getLogger(PruningProcess.class);
    private static PruningProcess shared;

    private final List<String> command;
    private final long timeoutMs;
    private final long startTimeoutMs;
    private final long retryAfterMs;
    private final Semaphore slots;
    private final AtomicLong ids = new AtomicLong();
    private final Map<Long, CompletableFuture<String>> pending = new ConcurrentHashMap<>();

    private volatile Process process; // written under this
    private OutputStream toProcess; // guarded by this
    private long noStartUntil;      // guarded by this: System.nanoTime() deadline
    private volatile String lastFailure;

    PruningProcess(List<String> command, long timeoutMs, long startTimeoutMs, int maxPending,
                   long retryAfterMs) {
        this.command = command;
        this.timeoutMs = timeoutMs;
        this.startTimeoutMs = startTimeoutMs;
        this.retryAfterMs = retryAfterMs;
        this.slots = new Semaphore(Math.max(1, maxPending));
    }

    /** The JVM's one pruning process client, configured from {@code conf} on first use. */
    public static synchronized PruningProcess shared(SparkConf conf) {
        if (shared == null) {
            shared = new PruningProcess(command(conf),
                    conf.getTimeAsMs(TIMEOUT_CONF, "10s"), conf.getTimeAsMs(START_TIMEOUT_CONF, "60s"),
                    conf.getInt(MAX_PENDING_CONF, 64), conf.getTimeAsMs(RETRY_CONF, "30s"));
            Runtime.getRuntime().addShutdownHook(new Thread(shared::stop, "metaindex-pruned-stop"));
        }
        return shared;
    }

    /** The process's command line: conf {@code spark.metaindex.python}, else the environment's
     * {@code PYSPARK_PYTHON}, else {@code python3}; then {@code -m metaindex.spark.pruned}. */
    static List<String> command(SparkConf conf) {
        String python = conf.get(PYTHON_CONF, "");
        if (python.isEmpty()) {
            String env = System.getenv("PYSPARK_PYTHON");
            python = env != null && !env.isEmpty() ? env : "python3";
        }
        List<String> out = new ArrayList<>();
        out.add(python);
        out.add("-m");
        out.add("metaindex.spark.pruned");
        out.add("--protocol");
        out.add(Integer.toString(PROTOCOL));
        return out;
    }

    /** The operating system's id of the running process, or -1 (none is running). */
    public synchronized long pid() {
        return process != null && process.isAlive() ? SparkCompat.pid(process) : -1;
    }

    /** How many requests are waiting for an answer now. */
    public int waiting() {
        return pending.size();
    }

    /** Why the last request was answered {@code NONE} by this client (null: none was). */
    public String lastFailure() {
        return lastFailure;
    }

    @Override
    public String prune(String request) {
        if (!slots.tryAcquire()) {
            return giveUp("more than " + MAX_PENDING_CONF + " requests waiting", null);
        }
        long id = ids.incrementAndGet();
        CompletableFuture<String> reply = new CompletableFuture<>();
        pending.put(id, reply);
        try {
            String failure = send("prune", id, request, true);
            if (failure != null) {
                return giveUp(failure, null);
            }
            return reply.get(timeoutMs, TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            // a hung process (or a stopped one, whose stdin would fill and block writers) is
            // killed; the next request starts a new one
            Process hung = process;
            if (hung != null) {
                hung.destroyForcibly();
            }
            return giveUp("gave no answer within " + timeoutMs + " ms (" + TIMEOUT_CONF
                    + "); it was stopped and will be started again", null);
        } catch (ExecutionException e) {
            return giveUp(e.getCause().getMessage(), null);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return giveUp("interrupted", null);
        } finally {
            pending.remove(id);
            slots.release();
        }
    }

    @Override
    public void report(String report) {
        send("report", 0, report, false);  // no answer; a lost report only leaves stats short
    }

    /** {@code NONE} after a stats line that says why (the scan's stats show it). */
    private String giveUp(String why, Throwable t) {
        lastFailure = why;
        LOG.warn("metaindex: this scan reads every file: the pruning process {}", why, t);
        StringBuilder out = new StringBuilder(64 + why.length());
        out.append("{\"reason\":");
        FilterJson.string(out, "the pruning process " + why);
        return out.append("}\nNONE").toString();
    }

    /** Writes one frame, starting the process first if needed and {@code start}; the
     * failure, or null. */
    private synchronized String send(String kind, long id, String payload, boolean start) {
        if (!start && (process == null || !process.isAlive())) {
            return "is not running";
        }
        String failure = ensureStarted();
        if (failure != null) {
            return failure;
        }
        byte[] body = payload.getBytes(StandardCharsets.UTF_8);
        try {
            toProcess.write((kind + " " + id + " " + body.length + "\n")
                    .getBytes(StandardCharsets.US_ASCII));
            toProcess.write(body);
            toProcess.flush();
            return null;
        } catch (IOException e) {
            return "could not be written to (" + e.getMessage() + ")";
        }
    }

    /** Starts the process when none runs; the reason it cannot run, or null. */
    private String ensureStarted() {
        if (process != null && process.isAlive()) {
            return null;
        }
        if (process != null) {
            LOG.warn("metaindex: the pruning process exited (code {}); starting it again",
                    process.exitValue());
            process = null;
        }
        if (System.nanoTime() < noStartUntil) {
            return "is not running (it failed to start: " + lastFailure + ")";
        }
        try {
            Process p = new ProcessBuilder(command).start();
            drainStderr(p);
            InputStream in = p.getInputStream();
            String hello = handshake(p, in);
            if (hello != null) {
                p.destroyForcibly();
                noStartUntil = System.nanoTime() + retryAfterMs * 1_000_000L;
                return hello;
            }
            process = p;
            toProcess = p.getOutputStream();
            Thread reader = new Thread(() -> readReplies(p, in), "metaindex-pruned-reader");
            reader.setDaemon(true);
            reader.start();
            LOG.info("metaindex: started the pruning process {} (pid {})", command, SparkCompat.pid(p));
            return null;
        } catch (IOException e) {
            noStartUntil = System.nanoTime() + retryAfterMs * 1_000_000L;
            return "could not be started with " + command + " (" + e.getMessage()
                    + "); set " + PYTHON_CONF + " to a Python that has metaindex installed";
        }
    }

    /** Waits for the {@code hello} frame; the reason it did not come, or null. */
    private String handshake(Process p, InputStream in) {
        CompletableFuture<String> hello = CompletableFuture.supplyAsync(() -> {
            try {
                Frame f = Frame.read(in);
                if (!f.kind.equals("hello")) {
                    return "began with a '" + f.kind + "' frame, not 'hello'";
                }
                String[] words = f.payload.split(" ");
                if (words.length < 2 || !words[0].equals("metaindex-pruned")
                        || !words[1].equals(Integer.toString(PROTOCOL))) {
                    return "speaks '" + f.payload + "', not metaindex-pruned " + PROTOCOL;
                }
                return null;
            } catch (IOException e) {
                return "exited before it was ready (" + e.getMessage() + ")";
            }
        });
        try {
            String why = hello.get(startTimeoutMs, TimeUnit.MILLISECONDS);
            if (why != null && !p.isAlive()) {
                why += ", exit code " + p.exitValue() + " (its stderr is in this log)";
            }
            return why;
        } catch (TimeoutException e) {
            return "was not ready within " + startTimeoutMs + " ms (" + START_TIMEOUT_CONF + ")";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "start interrupted";
        } catch (ExecutionException e) {
            return "failed to start (" + e.getCause() + ")";
        }
    }

    private void readReplies(Process p, InputStream in) {
        String why;
        try {
            while (true) {
                Frame f = Frame.read(in);
                CompletableFuture<String> waiting = pending.get(f.id);
                if (waiting == null) {
                    continue;  // its request timed out
                }
                if (f.kind.equals("reply")) {
                    waiting.complete(f.payload);
                } else {
                    waiting.completeExceptionally(new IllegalStateException(
                            "answered " + f.kind + ": " + f.payload));
                }
            }
        } catch (IOException e) {
            why = "exited or closed its output (" + e.getMessage() + ")";
        }
        IllegalStateException gone = new IllegalStateException(why);
        for (CompletableFuture<String> waiting : pending.values()) {
            waiting.completeExceptionally(gone);
        }
        synchronized (this) {
            if (process == p) {
                p.destroyForcibly();
            }
        }
    }

    private static void drainStderr(Process p) {
        Thread t = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(
                    new InputStreamReader(p.getErrorStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                    LOG.warn("metaindex pruned[{}]: {}", SparkCompat.pid(p), line);
                }
            } catch (IOException e) {
                // the process is gone
            }
        }, "metaindex-pruned-stderr");
        t.setDaemon(true);
        t.start();
    }

    /** Stops the process (closing its stdin ends it; it is killed if it lingers). */
    public synchronized void stop() {
        Process p = process;
        process = null;
        if (p == null) {
            return;
        }
        try {
            p.getOutputStream().close();
            if (!p.waitFor(2, TimeUnit.SECONDS)) {
                p.destroyForcibly();
            }
        } catch (IOException | InterruptedException e) {
            p.destroyForcibly();
        }
    }

    /** One frame: {@code <kind> <id> <length>\n} and the payload. */
    static final class Frame {
        final String kind;
        final long id;
        final String payload;

        private Frame(String kind, long id, String payload) {
            this.kind = kind;
            this.id = id;
            this.payload = payload;
        }

        static Frame read(InputStream in) throws IOException {
            ByteArrayOutputStream header = new ByteArrayOutputStream(MAX_HEADER);
            int b;
            while ((b = in.read()) != '\n') {
                if (b < 0) {
                    throw new EOFException("end of stream");
                }
                if (header.size() >= MAX_HEADER) {
                    throw new IOException("frame header longer than " + MAX_HEADER + " bytes");
                }
                header.write(b);
            }
            String[] words = new String(header.toByteArray(), StandardCharsets.US_ASCII).split(" ");
            if (words.length != 3) {
                throw new IOException("malformed frame header '" + header + "'");
            }
            long id;
            int length;
            try {
                id = Long.parseLong(words[1]);
                length = Integer.parseInt(words[2]);
            } catch (NumberFormatException e) {
                throw new IOException("malformed frame header '" + header + "'");
            }
            if (length < 0 || length > MAX_PAYLOAD) {
                throw new IOException("frame length " + length + " out of range");
            }
            return new Frame(words[0], id, new String(payload(in, length), StandardCharsets.UTF_8));
        }

        /** The next {@code length} bytes, read in chunks: memory follows what arrives, not what
         * a header claims. */
        private static byte[] payload(InputStream in, int length) throws IOException {
            byte[] chunk = new byte[Math.min(length, 1 << 16)];
            ByteArrayOutputStream body = new ByteArrayOutputStream(chunk.length);
            int left = length;
            while (left > 0) {
                int n = in.read(chunk, 0, Math.min(left, chunk.length));
                if (n < 0) {
                    throw new EOFException("end of stream inside a frame");
                }
                body.write(chunk, 0, n);
                left -= n;
            }
            return body.toByteArray();
        }
    }
}
