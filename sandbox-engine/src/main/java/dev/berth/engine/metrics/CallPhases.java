package dev.berth.engine.metrics;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;

/**
 * Where the time of one tool call went, phase by phase, for the latency benchmark ({@code LatencyBench} prints the
 * breakdown of a {@code run}). Off unless the server's JVM runs with {@code -Dberth.phases=FILE}: then the thread that
 * handles a call {@link #begin}s it, the code on its path {@link #mark}s the end of each phase, and {@link #end} queues
 * the call's phases, which a daemon thread appends to FILE as one JSON object per line (off the call's path; the
 * rest at exit). Off, a mark is one {@code ThreadLocal} read.
 *
 * <p>Phases are the time on the calling thread between two marks, so work moved to another thread shows up only as
 * the wait for it ({@code ...wait} phases). Thread-safe: each call's phases belong to its thread.
 */
public final class CallPhases {
    private static final Path FILE = System.getProperty("berth.phases") == null ? null : Path.of(System.getProperty("berth.phases"));
    private static final ThreadLocal<CallPhases> CURRENT = new ThreadLocal<>();
    private static final ConcurrentLinkedQueue<String> DONE = new ConcurrentLinkedQueue<>();

    static {
        if (FILE != null) {
            Thread.ofPlatform().daemon().name("berth-phases").start(() -> {
                while (true) {
                    try {
                        TimeUnit.MILLISECONDS.sleep(200);
                    } catch (InterruptedException e) {
                        return;
                    }
                    flush();
                }
            });
            Runtime.getRuntime().addShutdownHook(new Thread(CallPhases::flush, "berth-phases-exit"));
        }
    }

    private final String call;
    private final long start = System.nanoTime();
    private final Map<String, Long> nanos = new LinkedHashMap<>();
    private long last = start;

    private CallPhases(String call) { this.call = call; }

    /** Whether phases are recorded in this JVM. */
    public static boolean enabled() { return FILE != null; }

    /** When the transport last read a request ({@link #read}); with one request at a time, the one being handled. */
    private static volatile long lastRead;
    /** When the last call ended on its handler ({@link #end}). */
    private static volatile long lastEnd;

    /** A transport read a request now (one at a time, as the benchmark sends them: the next call begun is its). */
    public static void read(long nanos) {
        if (FILE != null) lastRead = nanos;
    }

    /** Starts timing a call of {@code tool} on this thread (a no-op unless enabled). */
    public static void begin(String tool) {
        if (FILE == null) return;
        CallPhases p = new CallPhases(tool);
        long read = lastRead;
        // the request's way from the transport's reader to this handler (JSON-RPC check, SDK dispatch and validation)
        if (read != 0 && read < p.start) p.nanos.put("mcp.read_to_handler", p.start - read);
        CURRENT.set(p);
    }

    /** Closes the phase that ran on this thread since the last mark (or {@link #begin}) as {@code phase}. */
    public static void mark(String phase) {
        CallPhases p = CURRENT.get();
        if (p == null) return;
        long now = System.nanoTime();
        p.nanos.merge(phase, now - p.last, Long::sum);
        p.last = now;
    }

    /** Ends this thread's call: what ran since the last mark is {@code phase}; the call is queued for the file. */
    public static void end(String phase) {
        CallPhases p = CURRENT.get();
        if (p == null) return;
        mark(phase);
        CURRENT.remove();
        lastEnd = p.last;
        StringBuilder sb = new StringBuilder("{\"call\":\"").append(p.call).append("\",\"total_us\":")
                .append((p.last - p.start) / 1000).append(",\"phases_us\":{");
        boolean first = true;
        for (var e : p.nanos.entrySet()) {
            if (!first) sb.append(',');
            first = false;
            sb.append('"').append(e.getKey()).append("\":").append(e.getValue() / 1000);
        }
        DONE.add(sb.append("}}\n").toString());
    }

    /**
     * A transport's whole time on one request of {@code method}, from reading its line to writing the answer (the
     * handler's phases plus the SDK's dispatch, validation and encoding); queued as a call named "server:METHOD".
     */
    public static void server(String method, long nanos) {
        if (FILE == null) return;
        long written = System.nanoTime() - lastEnd; // from the handler's end to the answer written (SDK, encoding)
        DONE.add("{\"call\":\"server:" + method + "\",\"total_us\":" + nanos / 1000 + ",\"handler_to_written_us\":" + written / 1000 + "}\n");
    }

    private static synchronized void flush() {
        StringBuilder sb = new StringBuilder();
        for (String s; (s = DONE.poll()) != null; ) sb.append(s);
        if (sb.isEmpty()) return;
        try {
            Files.writeString(FILE, sb, StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        } catch (IOException e) {
            throw new UncheckedIOException("writing call phases to " + FILE, e);
        }
    }
}
