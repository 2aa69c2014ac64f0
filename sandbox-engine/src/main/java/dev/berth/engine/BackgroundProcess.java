package dev.berth.engine;

import dev.berth.engine.agent.ExecExit;
import dev.berth.engine.agent.ExecHandle;
import dev.berth.engine.agent.ExecListener;
import dev.berth.engine.EngineException.Kind;
import java.nio.charset.StandardCharsets;

/**
 * A process started with run {background: true}: its output goes to two {@link OutputLog}s that readers page through
 * by offset; a server-side cursor remembers where the last read ended. Thread-safe.
 */
final class BackgroundProcess implements ExecListener {
    static final int LOG_CAPACITY = 1 << 20;

    final String id;
    final String workspace;
    final String command;
    final long startedNanos = System.nanoTime();
    final OutputLog out = new OutputLog(LOG_CAPACITY);
    final OutputLog err = new OutputLog(LOG_CAPACITY);
    private volatile ExecHandle handle;
    private long outCursor;
    private long errCursor;

    BackgroundProcess(String id, String workspace, String command) {
        this.id = id;
        this.workspace = workspace;
        this.command = command;
    }

    private final java.util.concurrent.atomic.AtomicReference<Runnable> onEnd = new java.util.concurrent.atomic.AtomicReference<>();

    void attach(ExecHandle h) { this.handle = h; }

    /** Runs {@code r} once, when the process ends or is forgotten (park, close, restart), whichever comes first. */
    void onEnd(Runnable r) {
        onEnd.set(r);
        handle.exit().whenComplete((x, e) -> ended());
    }

    /** The process is over as far as the engine is concerned. Idempotent. */
    void ended() {
        Runnable r = onEnd.getAndSet(null);
        if (r != null) r.run();
    }

    ExecHandle handle() { return handle; }

    /**
     * Sends {@code signal} ("TERM", "KILL", "INT", "HUP"; null = none) to the process tree, then waits up to
     * {@code waitSeconds} for new output or the end. Returns a note on what was done, or null.
     */
    String signalAndWait(String signal, int waitSeconds) throws EngineException {
        String note = null;
        if (signal != null) {
            int signo = switch (signal) {
                case "TERM" -> 15;
                case "KILL" -> 9;
                case "INT" -> 2;
                case "HUP" -> 1;
                default -> throw new EngineException(Kind.INVALID_ARGUMENT, "signal '" + signal + "' is not one of TERM, KILL, INT, HUP");
            };
            if (running()) {
                try {
                    handle().signal(signo);
                    note = "sent SIG" + signal + " to its process tree";
                } catch (java.io.IOException e) {
                    throw new EngineException(Kind.UNAVAILABLE, "could not signal process '" + id + "': " + e.getMessage(), e);
                }
            } else {
                note = "it had already ended";
            }
        }
        if (waitSeconds > 0) {
            long deadline = System.nanoTime() + waitSeconds * 1_000_000_000L;
            long o = out.total();
            long e = err.total();
            while (System.nanoTime() < deadline && running() && out.total() == o && err.total() == e) {
                try {
                    handle().exit().get(50, java.util.concurrent.TimeUnit.MILLISECONDS);
                } catch (java.util.concurrent.TimeoutException | java.util.concurrent.ExecutionException ignored) {
                    // keep waiting: new output or the end, whichever comes first
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    break;
                }
            }
        }
        return note;
    }

    /** When the process last wrote output (or started): output counts as activity for the idle policy. */
    volatile java.time.Instant lastOutputAt = java.time.Instant.now();

    @Override public void onStdout(byte[] data) { out.append(data); lastOutputAt = java.time.Instant.now(); }
    @Override public void onStderr(byte[] data) { err.append(data); lastOutputAt = java.time.Instant.now(); }

    boolean running() { return !handle.exit().isDone(); }

    /** New output since the given offsets (null = where the previous read ended), then moves the cursor. */
    synchronized ProcessStatus read(Long outSince, Long errSince, int max, String note) {
        OutputLog.Slice o = out.read(outSince == null ? outCursor : outSince, max);
        OutputLog.Slice e = err.read(errSince == null ? errCursor : errSince, max);
        outCursor = o.next();
        errCursor = e.next();
        ExecExit x = handle.exit().isDone() && !handle.exit().isCompletedExceptionally() ? handle.exit().join() : null;
        Integer code = x == null ? null : x.termSignal() != 0 ? 128 + x.termSignal() : x.exitCode();
        boolean lost = handle.exit().isCompletedExceptionally();
        return new ProcessStatus(id, workspace, handle.pid(), command, x == null && !lost, code, x == null ? 0 : x.termSignal(),
                x != null && x.timedOut(), new String(o.data(), StandardCharsets.UTF_8), new String(e.data(), StandardCharsets.UTF_8),
                o.from(), o.next(), e.from(), e.next(), o.dropped(), e.dropped(), (System.nanoTime() - startedNanos) / 1_000_000,
                lost ? "the connection to the workspace's agent was lost (parked or restarted); output is no longer collected" : note);
    }
}
