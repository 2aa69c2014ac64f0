package dev.berth.engine;

import java.time.Instant;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * Parks idle persistent workspaces and closes idle ephemeral ones, on one daemon thread. A workspace with a run in
 * flight, or one whose lock is held by a transition, is left for the next round. Thread-safe.
 */
final class IdleReaper implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger("berth.engine");

    private final EngineConfig config;
    private final WorkspaceRegistry registry;
    private final WorkspaceLifecycle lifecycle;
    private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "berth-idle-reaper");
        t.setDaemon(true);
        return t;
    });

    IdleReaper(EngineConfig config, WorkspaceRegistry registry, WorkspaceLifecycle lifecycle) {
        this.config = config;
        this.registry = registry;
        this.lifecycle = lifecycle;
    }

    void start() {
        long period = Math.max(5, Math.min(60, Math.min(positive(config.idleParkSeconds()), positive(config.idleCloseSeconds())) / 4));
        timer.scheduleWithFixedDelay(this::reap, period, period, TimeUnit.SECONDS);
    }

    private static long positive(long v) { return v > 0 ? v : Long.MAX_VALUE / 8; }

    void reap() {
        Instant now = Instant.now();
        for (Workspace ws : registry.all()) {
            long limit = ws.lifecycle == Lifecycle.PERSISTENT ? config.idleParkSeconds() : config.idleCloseSeconds();
            if (limit <= 0 || ws.lastUsedAt.plusSeconds(limit).isAfter(now)) continue;
            if (!ws.lock.tryLock()) continue;
            try {
                if (ws.activeRuns > 0 || ws.state() != WorkspaceState.RUNNING) continue;
                if (ws.lifecycle == Lifecycle.PERSISTENT) {
                    lifecycle.parkLocked(ws);
                    LOG.log(System.Logger.Level.INFO, "parked idle workspace " + ws.label());
                } else {
                    lifecycle.destroyAndDelete(ws);
                    LOG.log(System.Logger.Level.INFO, "closed idle ephemeral workspace " + ws.label());
                }
            } catch (EngineException e) {
                LOG.log(System.Logger.Level.WARNING, e.getMessage());
            } finally {
                ws.lock.unlock();
            }
        }
    }

    @Override
    public void close() { timer.shutdownNow(); }
}
