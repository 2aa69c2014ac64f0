package dev.berth.engine.lifecycle;

import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.Lifecycle;
import dev.berth.engine.api.ParkResult;
import dev.berth.engine.api.WorkspaceState;
import dev.berth.engine.run.BackgroundProcess;
import dev.berth.engine.workspace.Workspace;
import dev.berth.engine.workspace.WorkspaceRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A server's stop, the same rule on every level (see sandbox-engine/DESIGN.md, "Stopping"): every workspace at once,
 * each under its lock (so one mid-start, mid-resume or mid-park is waited for); commands in it get SIGTERM and a grace
 * period before their sandbox is killed and reaped, and only then is its storage released; persistent workspaces are
 * parked (memory kept where the level can, with their processes frozen in it), ephemeral ones closed. The whole stop
 * is bounded; what it could not finish is named in its report and left as after a crash, for the next start to
 * recover. {@link #halt} is the fast path of a second stop signal. One instance per stop; thread-safe.
 */
public final class WorkspaceStop {
    /** How long a whole stop may take before what is unfinished is left for the next start. */
    public static final Duration BOUND = Duration.ofSeconds(60);
    /** How long commands get between SIGTERM and SIGKILL in a stop. */
    public static final Duration TERM_GRACE = Duration.ofSeconds(1);
    /** How long the fast path of a second stop signal may take. */
    public static final Duration HALT_BOUND = Duration.ofSeconds(10);
    private static final System.Logger LOG = System.getLogger("berth.engine");

    private final WorkspaceLifecycle lifecycle;
    private final WorkspaceRegistry registry;
    private final List<String> parked = Collections.synchronizedList(new ArrayList<>());
    /** Why each workspace the stop could not finish was left, by label; the first reason found wins. */
    private final java.util.Map<String, String> left = new java.util.concurrent.ConcurrentSkipListMap<>();
    private final AtomicInteger closed = new AtomicInteger();
    private final AtomicInteger commands = new AtomicInteger();

    WorkspaceStop(WorkspaceLifecycle lifecycle, WorkspaceRegistry registry) {
        this.lifecycle = lifecycle;
        this.registry = registry;
    }

    /** Parks or closes every workspace within {@code bound}, giving commands {@code grace} between SIGTERM and SIGKILL. */
    StopReport run(Duration bound, Duration grace) {
        long t0 = System.nanoTime();
        long deadline = t0 + bound.toNanos();
        List<Thread> threads = new ArrayList<>();
        List<Workspace> all = new ArrayList<>(registry.all());
        for (Workspace ws : all) {
            threads.add(Thread.ofVirtual().name("berth-stop-" + ws.id).start(() -> stop(ws, deadline, grace)));
        }
        for (int i = 0; i < threads.size(); i++) {
            try {
                if (!threads.get(i).join(Duration.ofNanos(Math.max(1, deadline - System.nanoTime())))) {
                    left.putIfAbsent(all.get(i).label(), "still " + all.get(i).state().wireName() + " when the stop's "
                            + bound.toSeconds() + " s were over");
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                left.putIfAbsent("the stop", "interrupted");
                break;
            }
        }
        List<String> unfinished = left.entrySet().stream().map(e -> e.getKey() + " (" + e.getValue() + ")").toList();
        return new StopReport(parked, closed.get(), commands.get(), unfinished, (System.nanoTime() - t0) / 1_000_000, false);
    }

    private void stop(Workspace ws, long deadline, Duration grace) {
        try {
            if (!ws.lock.tryLock(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                left.putIfAbsent(ws.label(), "busy " + ws.state().wireName() + " until the stop's bound was over");
                return;
            }
        } catch (InterruptedException e) {
            left.putIfAbsent(ws.label(), "interrupted while waiting for it");
            return;
        }
        try {
            if (ws.state() == WorkspaceState.CLOSED || !registry.all().contains(ws)) return; // a failed open, or closed meanwhile
            boolean keepsProcesses = ws.lifecycle == Lifecycle.PERSISTENT && ws.driver.capabilities().parkKeepsMemory();
            if (ws.lifecycle == Lifecycle.EPHEMERAL) {
                commands.addAndGet(terminate(ws, grace));
                lifecycle.destroyAndDelete(ws);
                closed.incrementAndGet();
            } else if (ws.state() == WorkspaceState.RUNNING && ws.sandbox() != null) {
                if (!keepsProcesses) commands.addAndGet(terminate(ws, grace));
                ParkResult r = lifecycle.parkLocked(ws);
                parked.add(ws.label() + (r.memoryKept() ? " memory kept" : " files only"));
            }
        } catch (EngineException | RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "stop of " + ws.id + ": " + e.getMessage());
            left.putIfAbsent(ws.label(), e.getMessage());
        } finally {
            ws.lock.unlock();
        }
    }

    /**
     * Sends SIGTERM to the workspace's background processes, waits up to {@code grace} for them to end and sends
     * SIGKILL to the rest; the sandbox's destruction stops foreground runs (SIGTERM and a grace where the level can
     * signal them, see NamespaceSandbox#destroy) and kills what is left.
     * Returns the commands in flight: background processes running and foreground runs.
     */
    private static int terminate(Workspace ws, Duration grace) {
        List<BackgroundProcess> running = BackgroundProcess.all(ws).stream().filter(BackgroundProcess::running).toList();
        for (BackgroundProcess p : running) {
            try {
                p.signalAndWait("TERM", 0);
            } catch (EngineException e) {
                // its agent session is gone: the sandbox's end takes the process with it
            }
        }
        long until = System.nanoTime() + grace.toNanos();
        while (System.nanoTime() < until && running.stream().anyMatch(BackgroundProcess::running)) {
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        for (BackgroundProcess p : running) {
            if (!p.running()) continue;
            try {
                p.signalAndWait("KILL", 0); // ignored SIGTERM: the grace is over
            } catch (EngineException e) {
                // its agent session is gone: the sandbox's end takes the process with it
            }
        }
        return running.size() + ws.activeRuns();
    }

    /**
     * The fast path of a second stop signal: every sandbox killed and its runtime storage released through its
     * driver's clean-up, without the workspaces' locks and without parking. Records on disk stay as they were (each
     * written atomically), so persistent workspaces are found by the next start as after a crash; ephemeral ones are
     * deleted by it. Bounded by {@code bound}.
     */
    static StopReport halt(WorkspaceRegistry registry, Duration bound) {
        long t0 = System.nanoTime();
        AtomicInteger killed = new AtomicInteger();
        List<String> left = Collections.synchronizedList(new ArrayList<>());
        List<Thread> threads = new ArrayList<>();
        for (Workspace ws : registry.all()) {
            // a workspace the clean stop is destroying right now has no sandbox any more, but may still hold its
            // mounts and processes: its runtime folder says so, and the driver's clean-up releases it all the same
            boolean live = ws.sandbox() != null;
            if (!live && !java.nio.file.Files.isDirectory(ws.runtimeDir)) continue;
            threads.add(Thread.ofVirtual().name("berth-halt-" + ws.id).start(() -> {
                try {
                    ws.driver.cleanupRuntime(ws.runtimeDir);
                    if (live) killed.incrementAndGet();
                } catch (RuntimeException e) {
                    left.add(ws.label() + " (" + e.getMessage() + ")");
                }
            }));
        }
        long deadline = t0 + bound.toNanos();
        for (Thread t : threads) {
            try {
                if (!t.join(Duration.ofNanos(Math.max(1, deadline - System.nanoTime())))) left.add(t.getName().substring("berth-halt-".length()) + " (still being killed)");
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        return new StopReport(List.of(), killed.get(), 0, left, (System.nanoTime() - t0) / 1_000_000, true);
    }
}
