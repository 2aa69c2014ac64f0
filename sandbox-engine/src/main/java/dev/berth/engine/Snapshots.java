package dev.berth.engine;

import dev.berth.engine.EngineException.Kind;
import dev.berth.engine.spi.Sandbox;
import dev.berth.engine.spi.SandboxException;
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
final class Snapshots {
    private final Store store;
    private final WorkspaceRegistry registry;
    private final SnapshotCatalog catalog;

    Snapshots(Store store, WorkspaceRegistry registry) {
        this.store = store;
        this.registry = registry;
        this.catalog = new SnapshotCatalog(store);
    }

    Store.SnapshotRecord find(Tenant tenant, String ref) throws EngineException { return catalog.find(tenant, ref); }

    List<SnapshotInfo> list(Tenant tenant) throws EngineException { return catalog.list(tenant); }

    SnapshotInfo take(Tenant tenant, Workspace ws, String name) throws EngineException {
        ws.lock.lock();
        try {
            Transitions.Effect effect = ws.admit(WorkspaceAction.SNAPSHOT);
            synchronized (registry.namesLock) {
                if (name != null && catalog.byName(tenant, name).isPresent()) {
                    throw new EngineException(Kind.CONFLICT, "a snapshot named '" + name + "' exists already; pick another name");
                }
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
                    out = ws.sandbox.snapshot(state);
                }
            } catch (SandboxException | RuntimeException e) {
                Store.deleteQuietly(tmp);
                throw new EngineException(Kind.INTERNAL, "snapshot of workspace '" + ws.label() + "' failed: " + e.getMessage()
                        + "; the workspace is unchanged", e);
            }
            var rec = new Store.SnapshotRecord(id, tenant.id(), name == null ? id : name, ws.id, ws.driver.name(), out.memoryKept(),
                    out.stateBytes(), Instant.now().toString(), ws.fromSnapshot);
            store.save(tmp, rec);
            Files.move(tmp, store.snapshotDir(id), StandardCopyOption.ATOMIC_MOVE);
            return rec.info();
        } catch (IOException e) {
            throw new EngineException(Kind.INTERNAL, "snapshot of workspace '" + ws.label() + "' failed: " + e.getMessage(), e);
        } finally {
            ws.lock.unlock();
        }
    }

    /**
     * Deletes a snapshot. Refused while anything still builds on it (a microVM fork maps its snapshot's memory and
     * uses its disk as backing file): open workspaces forked from it, or snapshots taken of such workspaces.
     */
    SnapshotInfo delete(Tenant tenant, String ref) throws EngineException {
        synchronized (registry.namesLock) {
            Store.SnapshotRecord snap = catalog.find(tenant, ref);
            List<String> users = new ArrayList<>();
            for (Workspace w : registry.all()) {
                if (snap.id().equals(w.fromSnapshot) && w.state() != WorkspaceState.CLOSED) users.add("workspace " + w.label());
            }
            for (Store.SnapshotRecord other : catalog.all()) {
                if (snap.id().equals(other.parent())) users.add("snapshot " + other.name());
            }
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
            return snap.info();
        }
    }
}
