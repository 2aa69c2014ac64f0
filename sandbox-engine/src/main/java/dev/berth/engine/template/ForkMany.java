package dev.berth.engine.template;

import dev.berth.engine.api.EngineConfig;
import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.EngineException.Kind;
import dev.berth.engine.api.OpenRequest;
import dev.berth.engine.api.OpenResult;
import dev.berth.engine.api.Tenant;
import dev.berth.engine.spi.Resources;
import dev.berth.engine.workspace.DriverSelector;
import dev.berth.engine.workspace.WorkspaceRegistry;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;

/**
 * Opens {@code count} workspaces from one snapshot at once, their sandboxes started concurrently (one thread
 * each), all or nothing: when one cannot start, the others are closed and deleted and the first failure is reported.
 * Each fork is an ordinary open ({@link Opener#open}, the workspace lifecycle's): its own id, host uid, RNG state
 * (the microVM driver reseeds every fork) and run placeholders. Thread-safe.
 */
public final class ForkMany {
    /** How one fork is opened, and closed and deleted again when the others cannot all start. */
    public interface Opener {
        /** Opens one workspace, exactly as a single open does. */
        OpenResult open(Tenant tenant, OpenRequest req) throws EngineException;

        /** Closes and deletes a workspace this call opened. */
        void discard(Tenant tenant, String workspaceId) throws EngineException;
    }

    private final Opener lifecycle;
    private final WorkspaceRegistry registry;
    private final Snapshots snapshots;
    private final EngineConfig config;

    /**
     * Threads that start the forks' sandboxes and live as long as the engine: a sandbox process dies with the thread
     * that started it (bubblewrap's --die-with-parent is the parent thread's death signal), so a thread per call
     * would take its forks down when it ends. Platform threads, because virtual ones would also queue behind
     * whatever holds the few carrier threads, and a start blocks in processes and mounts anyway.
     */
    private final ExecutorService starters;

    public ForkMany(EngineConfig config, WorkspaceRegistry registry, Snapshots snapshots, Opener lifecycle) {
        int n = config.templates().forkLimit();
        var pool = new java.util.concurrent.ThreadPoolExecutor(n, n, 0, java.util.concurrent.TimeUnit.SECONDS,
                new java.util.concurrent.LinkedBlockingQueue<>(), Thread.ofPlatform().daemon().name("berth-fork-", 0).factory());
        this.starters = pool;
        this.config = config;
        this.registry = registry;
        this.snapshots = snapshots;
        this.lifecycle = lifecycle;
    }

    /** Stops the starter threads (at engine close, after every sandbox was stopped). */
    public void close() {
        starters.shutdownNow();
    }

    public List<OpenResult> open(Tenant tenant, OpenRequest req, int count, int limit) throws EngineException {
        if (limit < 1) throw new IllegalArgumentException("fork limit must be at least 1, got " + limit);
        if (count < 1 || count > limit) {
            throw new EngineException(Kind.INVALID_ARGUMENT, "count must be between 1 and " + limit
                    + " (the operator's limit of workspaces per call), got " + count);
        }
        if (count == 1) return List.of(lifecycle.open(tenant, req));
        if (req.fromSnapshot() == null) {
            throw new EngineException(Kind.INVALID_ARGUMENT, "count " + count + " forks workspaces from one snapshot;"
                    + " give from_snapshot (take one with the snapshot tool), or omit count to open one workspace");
        }
        if (req.name() != null) {
            throw new EngineException(Kind.INVALID_ARGUMENT, "name '" + req.name() + "' cannot be given to " + count
                    + " workspaces (names are unique); omit name, the forks are told apart by their ids");
        }
        // refused before anything starts: the snapshot (this tenant's), the level, the server limit, the quota for all
        snapshots.find(tenant, req.fromSnapshot());
        Resources resources = DriverSelector.validate(tenant, req.resources());
        synchronized (registry.namesLock) {
            long live = registry.live();
            if (live + count > config.maxWorkspaces()) {
                throw new EngineException(Kind.LIMIT, "cannot open " + count + " workspaces: " + live + " are open (limit "
                        + config.maxWorkspaces() + "); ask for fewer, or close or park some you no longer need");
            }
            registry.checkQuota(tenant, resources, true, count);
        }
        List<Future<OpenResult>> started = new ArrayList<>(count);
        List<OpenResult> opened = new ArrayList<>(count);
        EngineException first = null;
        for (int i = 0; i < count; i++) started.add(starters.submit(() -> lifecycle.open(tenant, req)));
        for (Future<OpenResult> f : started) {
            try {
                opened.add(f.get());
            } catch (ExecutionException e) {
                if (first == null) {
                    first = e.getCause() instanceof EngineException ee ? ee
                            : new EngineException(Kind.INTERNAL, "fork failed: " + e.getCause(), e.getCause());
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                if (first == null) first = new EngineException(Kind.UNAVAILABLE, "interrupted while forking", e);
            }
        }
        if (first == null) return List.copyOf(opened);
        for (OpenResult o : opened) {
            try {
                lifecycle.discard(tenant, o.workspace().id());
            } catch (EngineException e) {
                first.addSuppressed(e);
            }
        }
        throw new EngineException(first.kind(), first.getMessage() + " (forking " + count + " workspaces: "
                + (count - opened.size()) + " failed; the " + opened.size() + " that started were closed and deleted,"
                + " nothing was kept)", first);
    }
}
