package dev.berth.engine.run;

import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.EngineException.Kind;
import dev.berth.engine.api.ProcessStatus;
import dev.berth.engine.agent.ExecExit;
import dev.berth.engine.agent.ExecHandle;
import dev.berth.engine.agent.ExecListener;
import dev.berth.engine.workspace.Store;
import dev.berth.engine.workspace.TrackedProcess;
import dev.berth.engine.workspace.Workspace;
import java.nio.charset.StandardCharsets;

/**
 * A process started with run {background: true}: its output goes to two {@link OutputLog}s that readers page through
 * by offset; a server-side cursor remembers where the last read ended. Thread-safe.
 *
 * <p>Its handle outlives the agent connection where the driver keeps memory (a parked or taken-over microVM): the
 * engine {@link #suspend}s it before the connection goes, and {@link #reattach}es it by its agent run name
 * ({@link ExecHandle#run()}, protocol ATTACH) on the next one. Its id, command, run name and pid are persisted in
 * the workspace record ({@link Store.ProcessRecord}) so a new server can do the same after a crash.
 */
public final class BackgroundProcess implements ExecListener, TrackedProcess {
    static final int LOG_CAPACITY = dev.berth.schemas.Limits.intValue("run.background_log_bytes");

    final String id;
    final String workspace;
    final String command;
    final java.time.Instant startedAt;
    final long startedNanos;
    /** The run's egress narrowing as asked for (null: the workspace policy), persisted for a re-attach after a crash. */
    final java.util.List<String> egressRequest;
    final OutputLog out = new OutputLog(LOG_CAPACITY);
    final OutputLog err = new OutputLog(LOG_CAPACITY);
    private volatile ExecHandle handle;
    private long outCursor;
    private long errCursor;
    /** The engine expects to re-attach it: the loss of the current connection does not end it. */
    private volatile boolean suspended;
    /** Output bytes the agent dropped while no host was attached, over every re-attach. */
    private volatile long droppedWhileDetached;
    /** Why it could not be re-attached (it is then over for the engine); null otherwise. */
    private volatile String lostBecause;
    /** A terminal process's screen (run {tty}); null for a process on pipes. */
    private volatile TerminalScreen screen;
    static final int MAX_INPUT = dev.berth.schemas.Limits.intValue("run.process_input_bytes");
    /** Called with each new EXEC/ATTACH channel, before its tunnels arrive (binds the run's egress). */
    volatile java.util.function.IntConsumer onChannel;

    BackgroundProcess(String id, String workspace, String command, java.util.List<String> egressRequest,
                      java.time.InstantSource clock) {
        this(id, workspace, command, egressRequest, java.time.Instant.now(), System.nanoTime(), clock);
    }

    private BackgroundProcess(String id, String workspace, String command, java.util.List<String> egressRequest,
                              java.time.Instant startedAt, long startedNanos, java.time.InstantSource clock) {
        this.clock = clock;
        this.lastOutputAt = clock.instant();
        this.id = id;
        this.workspace = workspace;
        this.command = command;
        this.egressRequest = egressRequest;
        this.startedAt = startedAt;
        this.startedNanos = startedNanos;
    }

    /** A process a previous server started, known from the workspace record: suspended until {@link #reattach}. */
    static BackgroundProcess restored(Store.ProcessRecord r, String workspace, java.time.InstantSource clock) {
        java.time.Instant at = java.time.Instant.parse(r.startedAt());
        long ago = java.time.Duration.between(at, java.time.Instant.now()).toNanos();
        BackgroundProcess bp = new BackgroundProcess(r.id(), workspace, r.command(), r.egress(), at, System.nanoTime() - Math.max(0, ago), clock);
        bp.handle = new Detached(r.pid(), r.run());
        bp.suspended = true;
        return bp;
    }

    /** What the workspace record keeps of it, or null when it cannot be re-attached (no run name) or is over. */
    @Override
    public Store.ProcessRecord record() {
        ExecHandle h = handle;
        if (h.run() == null || onEnd.get() == null && !(h instanceof Detached)) return null;
        if (h.exit().isDone() && !suspended) return null;
        return new Store.ProcessRecord(id, command, h.run(), h.pid(), startedAt.toString(), egressRequest);
    }

    private final java.util.concurrent.atomic.AtomicReference<Runnable> onEnd = new java.util.concurrent.atomic.AtomicReference<>();

    void attach(ExecHandle h) { this.handle = h; }

    /** It runs on a terminal of this size (before {@link #attach}): its output also feeds a screen. */
    void useTerminal(dev.berth.engine.api.RunRequest.Terminal t) {
        if (t != null) screen = new TerminalScreen(t.cols(), t.rows());
    }

    /** Whether it runs on a terminal. */
    public boolean tty() { return screen != null; }

    /**
     * Types {@code data} into its terminal, then (with {@code endOfInput}) the terminal's EOF character (^D). Refused
     * for a process that ended (with its exit status), one on pipes, and input over the catalogue's bound.
     */
    public void input(byte[] data, boolean endOfInput) throws EngineException {
        if (data.length > MAX_INPUT) {
            throw new EngineException(Kind.INVALID_ARGUMENT, "stdin is " + data.length + " bytes; the limit per call is "
                    + MAX_INPUT + " (run.process_input_bytes): send it in parts, or write a file and redirect");
        }
        ExecHandle h = usableTerminal("send input to");
        try {
            if (data.length > 0) h.writeStdin(data);
            if (endOfInput) h.closeStdin();
        } catch (java.io.IOException | IllegalStateException e) {
            throw new EngineException(Kind.UNAVAILABLE, "could not send input to process '" + id + "': " + e.getMessage(), e);
        }
    }

    /** Sets its terminal's size (its programs get SIGWINCH) and the screen's. */
    public void resize(int cols, int rows) throws EngineException {
        Runner.checkSize(cols, rows);
        ExecHandle h = usableTerminal("resize the terminal of");
        try {
            h.resize(cols, rows);
        } catch (java.io.IOException | IllegalStateException e) {
            throw new EngineException(Kind.UNAVAILABLE, "could not resize the terminal of process '" + id + "': " + e.getMessage(), e);
        }
        screen.resize(cols, rows);
    }

    private ExecHandle usableTerminal(String what) throws EngineException {
        if (screen == null) {
            throw new EngineException(Kind.INVALID_ARGUMENT, "cannot " + what + " process '" + id + "': it was started without"
                    + " tty, so its stdin is /dev/null; start it with run {background: true, tty: {cols, rows}} to drive it");
        }
        ExecHandle h = handle;
        if (!running() || h.exit().isDone()) {
            ExecExit x = h.exit().isDone() && !h.exit().isCompletedExceptionally() ? h.exit().join() : null;
            throw new EngineException(Kind.ILLEGAL_STATE, "cannot " + what + " process '" + id + "': it has ended"
                    + (x == null ? "" : x.termSignal() != 0 ? " (killed by signal " + x.termSignal() + ")" : " (exit status " + x.exitCode() + ")")
                    + "; read its last output with run {workspace, process}");
        }
        return h;
    }

    /** Runs {@code r} once, when the process ends or is forgotten (park, close, restart), whichever comes first. */
    void onEnd(Runnable r) {
        onEnd.set(r);
        watch(handle);
    }

    /** The end of {@code h} ends the process, unless the engine suspended it to re-attach on another connection. */
    private void watch(ExecHandle h) {
        h.exit().whenComplete((x, e) -> {
            if (e == null || (!suspended && handle == h)) ended();
        });
    }

    /** Its connection is about to go (park of a driver that keeps memory): keep it for {@link #reattach}. */
    void suspend() { suspended = true; }

    public boolean suspended() { return suspended && lostBecause == null; }

    /** Whether its current handle is still connected (nothing to re-attach). */
    boolean connected() {
        ExecHandle h = handle;
        return !(h instanceof Detached) && !h.exit().isDone();
    }

    /** Takes it over on a new connection (ATTACH answered): output the agent kept follows on this listener. */
    void reattach(ExecHandle h) {
        droppedWhileDetached += h.droppedWhileDetached();
        handle = h;
        suspended = false;
        watch(h);
    }

    /** It was running when the connection went but could not be re-attached: over, saying why. */
    public void lost(String why) {
        lostBecause = why;
        suspended = false;
        ended();
    }

    /** Still suspended although its connection stayed (a park that did not happen): tracked as before. */
    void resumeInPlace() {
        suspended = false;
        ExecHandle h = handle;
        if (h.exit().isDone()) watch(h);
    }

    @Override
    public void onStarted(int channel) {
        java.util.function.IntConsumer c = onChannel;
        if (c != null) c.accept(channel);
    }

    /** The process is over as far as the engine is concerned. Idempotent. */
    @Override
    public void ended() {
        Runnable r = onEnd.getAndSet(null);
        if (r != null) r.run();
    }

    ExecHandle handle() { return handle; }

    @Override public String id() { return id; }

    @Override public java.time.Instant lastOutputAt() { return lastOutputAt; }

    @Override public boolean finished() { return !running() && handle.exit().isDone(); }

    /** The background process {@code id} of {@code ws}, or null. Every process a workspace tracks is one: only runs start them. */
    public static BackgroundProcess of(Workspace ws, String id) {
        return (BackgroundProcess) ws.process(id);
    }

    /** The background processes of {@code ws}, as a copy. */
    public static java.util.List<BackgroundProcess> all(Workspace ws) {
        return ws.processList().stream().map(BackgroundProcess.class::cast).toList();
    }

    /**
     * Sends {@code signal} ("TERM", "KILL", "INT", "HUP"; null = none) to the process tree, then waits up to
     * {@code waitSeconds} for new output or the end. Returns a note on what was done, or null.
     */
    public String signalAndWait(String signal, int waitSeconds) throws EngineException {
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
            // woken by new output (onStdout/onStderr) at once; the bounded wait also sees the end and a re-attach
            while (System.nanoTime() < deadline && running() && out.total() == o && err.total() == e) {
                synchronized (outputSignal) {
                    if (out.total() != o || err.total() != e) break;
                    try {
                        outputSignal.wait(50);
                    } catch (InterruptedException ie) {
                        Thread.currentThread().interrupt();
                        break;
                    }
                }
            }
        }
        return note;
    }

    /** When the process last wrote output (or started): output counts as activity for the idle policy. */
    /** When it last wrote, on the engine's clock (activity for the idle policy). */
    volatile java.time.Instant lastOutputAt;
    private final java.time.InstantSource clock;

    /** Notified on new output, so a reader waiting for it ({@link #signalAndWait}) returns at once. */
    private final Object outputSignal = new Object();

    @Override public void onStdout(byte[] data) {
        TerminalScreen sc = screen;
        if (sc != null) sc.feed(data);
        out.append(data);
        lastOutputAt = clock.instant();
        synchronized (outputSignal) { outputSignal.notifyAll(); }
    }
    @Override public void onStderr(byte[] data) {
        err.append(data);
        lastOutputAt = clock.instant();
        synchronized (outputSignal) { outputSignal.notifyAll(); }
    }

    @Override
    public boolean running() {
        if (lostBecause != null) return false;
        return suspended || !handle.exit().isDone();
    }

    /** New output since the given offsets (null = where the previous read ended), then moves the cursor. */
    public synchronized ProcessStatus read(Long outSince, Long errSince, int max, String note) {
        OutputLog.Slice o = out.read(outSince == null ? outCursor : outSince, max);
        OutputLog.Slice e = err.read(errSince == null ? errCursor : errSince, max);
        outCursor = o.next();
        errCursor = e.next();
        ExecHandle h = handle;
        boolean susp = suspended();
        ExecExit x = !susp && h.exit().isDone() && !h.exit().isCompletedExceptionally() ? h.exit().join() : null;
        Integer code = x == null ? null : x.termSignal() != 0 ? 128 + x.termSignal() : x.exitCode();
        boolean lost = lostBecause != null || (!susp && h.exit().isCompletedExceptionally());
        String said = lostBecause != null ? lostBecause
                : lost ? "the connection to the workspace's agent was lost; output is no longer collected"
                : susp ? "the workspace is parked: the process is frozen with it and goes on when the workspace resumes"
                : note;
        long d = droppedWhileDetached;
        if (d > 0) {
            String drop = d + " bytes of its output were dropped while no server was attached to the workspace (the agent"
                    + " keeps the newest 256 KiB per process)";
            said = said == null ? drop : said + "; " + drop;
        }
        return new ProcessStatus(id, workspace, h.pid(), command, x == null && !lost, code, x == null ? 0 : x.termSignal(),
                x != null && x.timedOut(), new String(o.data(), StandardCharsets.UTF_8), new String(e.data(), StandardCharsets.UTF_8),
                o.from(), o.next(), e.from(), e.next(), o.dropped(), e.dropped(), (System.nanoTime() - startedNanos) / 1_000_000,
                said, screen == null ? null : screen.text());
    }

    /** Stand-in handle of a process known from the record and not yet re-attached. */
    private record Detached(int pid, String run, java.util.concurrent.CompletableFuture<ExecExit> exit) implements ExecHandle {
        Detached(int pid, String run) { this(pid, run, new java.util.concurrent.CompletableFuture<>()); }
        @Override public int channel() { return 0; }
        @Override public void writeStdin(byte[] data) { throw new IllegalStateException("process is not attached"); }
        @Override public void closeStdin() { }
        @Override public void signal(int signo) throws java.io.IOException {
            throw new dev.berth.engine.agent.AgentException(11, "the process is not attached yet (its workspace is parked); run a command to resume it first");
        }
    }
}
