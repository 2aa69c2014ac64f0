package dev.berth.engine.template;

import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.EngineException.Kind;
import dev.berth.engine.api.SnapshotInfo;
import dev.berth.engine.api.Tenant;
import dev.berth.engine.api.WorkspaceState;
import dev.berth.engine.evidence.EngineEvidence;
import dev.berth.engine.spi.Sandbox;
import dev.berth.engine.spi.SandboxException;
import dev.berth.engine.workspace.Ids;
import dev.berth.engine.workspace.Store;
import dev.berth.engine.workspace.Transitions;
import dev.berth.engine.workspace.Workspace;
import dev.berth.engine.workspace.WorkspaceAction;
import dev.berth.engine.workspace.WorkspaceRegistry;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * Snapshots: taken of a running workspace (live, where the driver can) or of a parked one (from its saved state),
 * assembled in a hidden directory and renamed into place so a half-written snapshot is never listed; deleted only
 * when nothing builds on them any more. Thread-safe.
 */
public final class Snapshots {
    private final Store store;
    private final WorkspaceRegistry registry;
    private final SnapshotCatalog catalog;

    private final EngineEvidence evidence;

    /** Driver by name (null when not configured): whether a snapshot's forks outlive it. */
    private final java.util.function.Function<String, dev.berth.engine.spi.IsolationDriver> drivers;

    public Snapshots(Store store, WorkspaceRegistry registry, EngineEvidence evidence,
              java.util.function.Function<String, dev.berth.engine.spi.IsolationDriver> drivers) {
        this.drivers = drivers;
        this.store = store;
        this.registry = registry;
        this.evidence = evidence;
        this.catalog = new SnapshotCatalog(store);
    }

    public Store.SnapshotRecord find(Tenant tenant, String ref) throws EngineException { return catalog.find(tenant, ref); }

    /** The tenant's snapshots, each with what depends on it. */
    public List<SnapshotInfo> list(Tenant tenant) throws EngineException {
        List<Store.SnapshotRecord> all = catalog.all();
        return catalog.list(tenant).stream().map(s -> s.withDependents(dependents(s.id(), all))).toList();
    }

    /**
     * Live workspaces forked from the snapshot whose driver keeps using its files ({@code forksNeedSnapshot}: not the
     * namespace driver, whose forks own their layer, nor the microVM's, whose forks link its layers) and snapshots
     * taken of forks of it, by label.
     */
    private List<String> dependents(String snapshotId, List<Store.SnapshotRecord> all) {
        List<String> users = new ArrayList<>();
        for (Workspace w : registry.all()) {
            if (snapshotId.equals(w.fromSnapshot) && w.state() != WorkspaceState.CLOSED && w.driver.forksNeedSnapshot()) {
                users.add("workspace " + w.label());
            }
        }
        for (Store.SnapshotRecord other : all) {
            if (snapshotId.equals(other.parent())) users.add("snapshot " + other.name());
        }
        return users;
    }

    /** Refuses a snapshot that would take the tenant over its snapshot count, naming the numbers. */
    private void checkCount(Tenant tenant) throws EngineException {
        List<SnapshotInfo> mine = catalog.list(tenant);
        long bytes = mine.stream().mapToLong(SnapshotInfo::stateBytes).sum();
        Tenant.Quota q = tenant.quota();
        if (mine.size() + 1 > q.snapshots()) {
            throw new EngineException(Kind.LIMIT, "quota of tenant '" + tenant.id() + "' exceeded (snapshots: " + mine.size()
                    + " kept, limit " + q.snapshots() + "); delete one you no longer need with snapshot {delete}");
        }
        if (q.snapshotMiB() != Long.MAX_VALUE && bytes >= q.snapshotMiB() << 20) {
            throw new EngineException(Kind.LIMIT, "quota of tenant '" + tenant.id() + "' exceeded (snapshot storage: "
                    + (bytes >> 20) + " MiB used, limit " + q.snapshotMiB() + " MiB); delete snapshots you no longer need");
        }
    }

    public SnapshotInfo take(Tenant tenant, Workspace ws, String name) throws EngineException {
        long started = System.nanoTime();
        ws.lock.lock();
        try {
            Transitions.Effect effect = ws.admit(WorkspaceAction.SNAPSHOT);
            synchronized (registry.namesLock) {
                if (name != null && catalog.byName(tenant, name).isPresent()) {
                    throw new EngineException(Kind.CONFLICT, "a snapshot named '" + name + "' exists already; pick another name");
                }
                checkCount(tenant);
            }
            String id = Ids.next("snap-");
            Path tmp = store.snapshots.resolve("." + id);
            Path state = tmp.resolve("state");
            Files.createDirectories(state);
            Sandbox.ParkOutcome out;
            try {
                if (effect == Transitions.Effect.FROM_SAVED_STATE) {
                    long t0 = System.nanoTime();
                    ws.driver.snapshotParked(ws.stateDir(), state);
                    out = new Sandbox.ParkOutcome(ws.driver.capabilities().snapshotKeepsMemory() && Files.exists(state.resolve("memory")),
                            Store.treeBytes(state), (System.nanoTime() - t0) / 1_000_000);
                } else {
                    out = ws.sandbox().snapshot(state);
                }
            } catch (SandboxException | RuntimeException e) {
                Store.deleteQuietly(tmp);
                throw new EngineException(Kind.INTERNAL, "snapshot of workspace '" + ws.label() + "' failed: " + e.getMessage()
                        + "; the workspace is unchanged", e);
            }
            Tenant.Quota q = tenant.quota();
            if (q.snapshotMiB() != Long.MAX_VALUE) {
                long used = catalog.list(tenant).stream().mapToLong(SnapshotInfo::stateBytes).sum();
                if (used + out.stateBytes() > q.snapshotMiB() << 20) {
                    Store.deleteQuietly(tmp);
                    throw new EngineException(Kind.LIMIT, "quota of tenant '" + tenant.id() + "' exceeded (snapshot storage: "
                            + (used >> 20) + " MiB used + " + (out.stateBytes() >> 20) + " MiB for this one, limit "
                            + q.snapshotMiB() + " MiB); nothing was kept. Delete snapshots you no longer need");
                }
            }
            var rec = new Store.SnapshotRecord(id, tenant.id(), name == null ? id : name, ws.id, ws.driver.name(), out.memoryKept(),
                    out.stateBytes(), Instant.now().toString(), ws.fromSnapshot, ws.image());
            store.save(tmp, rec);
            dev.berth.engine.transfer.ImportRecord.copyInto(ws.dir, tmp); // a fork exports to where the files came from
            Files.move(tmp, store.snapshotDir(id), StandardCopyOption.ATOMIC_MOVE);
            evidence.lifecycle(ws, "snapshot", java.util.Map.of("snapshot", id, "snapshot_name", rec.name(),
                    "memory_kept", out.memoryKept(), "state_bytes", out.stateBytes()), started);
            evidence.snapshotDigest(ws, id, store.snapshotDir(id));
            return rec.info();
        } catch (IOException e) {
            throw new EngineException(Kind.INTERNAL, "snapshot of workspace '" + ws.label() + "' failed: " + e.getMessage(), e);
        } finally {
            ws.lock.unlock();
        }
    }

    /**
     * Deletes a snapshot. Where the driver's forks keep what they need of it ({@code forksNeedSnapshot} false: a
     * microVM fork hard-links the snapshot's layers, a namespace fork owns its layer), the snapshot goes at once and
     * its space is freed as its forks close. Otherwise refused while anything still builds on it: open workspaces
     * forked from it, or snapshots taken of such workspaces.
     */
    public SnapshotInfo delete(Tenant tenant, String ref) throws EngineException {
        synchronized (registry.namesLock) {
            Store.SnapshotRecord snap = catalog.find(tenant, ref);
            var driver = drivers.apply(snap.isolation());
            List<String> users = driver != null && !driver.forksNeedSnapshot() ? List.of() : dependents(snap.id(), catalog.all());
            if (!users.isEmpty()) {
                throw new EngineException(Kind.CONFLICT, "cannot delete snapshot '" + snap.name() + "': " + String.join(", ", users)
                        + " still build" + (users.size() == 1 ? "s" : "") + " on it; close or delete them first");
            }
            Path dir = store.snapshotDir(snap.id());
            Path doomed = store.snapshots.resolve(".deleted-" + snap.id());
            try {
                // rename first: a crash half-way leaves a hidden directory that start-up removes, never half a snapshot
                Files.move(dir, doomed, StandardCopyOption.ATOMIC_MOVE);
                Store.deleteTree(doomed);
            } catch (IOException e) {
                throw new EngineException(Kind.INTERNAL, "deleting snapshot '" + snap.name() + "' failed: " + e.getMessage(), e);
            }
            evidence.snapshotDeleted(tenant, snap.info());
            return snap.info();
        }
    }
}
