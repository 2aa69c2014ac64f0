package dev.berth.engine.lifecycle;

import dev.berth.engine.api.EngineConfig;
import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.Lifecycle;
import dev.berth.engine.api.LifecyclePolicy;
import dev.berth.engine.api.WorkspaceState;
import dev.berth.engine.workspace.Workspace;
import dev.berth.engine.workspace.WorkspaceRegistry;
import java.time.Instant;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.stream.LongStream;

/**
 * Applies the operator's {@link LifecyclePolicy} on one daemon thread: parks persistent workspaces whose
 * {@link Workspace#idleParkAt} has passed and closes ephemeral ones whose {@link Workspace#expiresAt} has passed. A
 * workspace with a run in flight, or whose lock a transition holds, is left for the next round, so nothing is ever
 * parked or closed in the middle of a run. Thread-safe.
 */
public final class IdleReaper implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger("berth.engine");

    private final EngineConfig config;
    private final WorkspaceRegistry registry;
    private final WorkspaceLifecycle lifecycle;
    private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "berth-idle-reaper");
        t.setDaemon(true);
        return t;
    });

    public IdleReaper(EngineConfig config, WorkspaceRegistry registry, WorkspaceLifecycle lifecycle) {
        this.config = config;
        this.registry = registry;
        this.lifecycle = lifecycle;
    }

    /** Checks every quarter of the shortest timer of any policy, at least every second and at most every minute. */
    public void start() {
        long shortest = LongStream.concat(LongStream.of(timers(config.lifecycle())),
                        config.tenantLifecycle().values().stream().flatMapToLong(p -> LongStream.of(timers(p))))
                .filter(v -> v > 0).min().orElse(240);
        long period = Math.max(1, Math.min(60, shortest / 4));
        timer.scheduleWithFixedDelay(this::reap, period, period, TimeUnit.SECONDS);
    }

    private static long[] timers(LifecyclePolicy p) {
        return new long[] {p.idleParkSeconds(), p.idleCloseSeconds(), p.ttlSeconds()};
    }

    /** One round now: parks or closes every workspace whose deadline has passed on the engine's clock. */
    public void reap() {
        Instant now = config.clock().instant();
        for (Workspace ws : registry.all()) {
            Instant due = ws.lifecycle == Lifecycle.PERSISTENT ? ws.idleParkAt() : ws.expiresAt();
            if (due == null || due.isAfter(now)) continue;
            if (!ws.lock.tryLock()) continue;
            try {
                if (ws.activeRuns() > 0) continue;
                if (ws.lifecycle == Lifecycle.PERSISTENT) {
                    if (ws.state() != WorkspaceState.RUNNING) continue;
                    lifecycle.parkLocked(ws);
                    LOG.log(System.Logger.Level.INFO, "parked idle workspace " + ws.label());
                } else {
                    if (ws.state() != WorkspaceState.RUNNING && ws.state() != WorkspaceState.PARKED) continue;
                    lifecycle.destroyAndDelete(ws);
                    LOG.log(System.Logger.Level.INFO, "closed ephemeral workspace " + ws.label() + " (idle or past its TTL)");
                }
            } catch (EngineException | RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "lifecycle policy on " + ws.label() + ": " + e.getMessage());
            } finally {
                ws.lock.unlock();
            }
        }
    }

    @Override
    public void close() { timer.shutdownNow(); }
}
