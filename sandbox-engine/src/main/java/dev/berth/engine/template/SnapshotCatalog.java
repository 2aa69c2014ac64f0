package dev.berth.engine.template;

import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.EngineException.Kind;
import dev.berth.engine.api.SnapshotInfo;
import dev.berth.engine.api.Tenant;
import dev.berth.engine.workspace.Store;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * Finds snapshots on disk for a tenant: by id or by name, never another tenant's (those are "not found"). Reads
 * each snapshot's checksummed record; an unreadable one is skipped with a warning. Thread-safe.
 */
final class SnapshotCatalog {
    private static final System.Logger LOG = System.getLogger("berth.engine");
    private static final Pattern ID = Pattern.compile("snap-[0-9a-f]{1,32}");
    private final Store store;

    SnapshotCatalog(Store store) { this.store = store; }

    /** Every readable snapshot record, of every tenant (for dependency checks). */
    List<Store.SnapshotRecord> all() throws EngineException {
        List<Store.SnapshotRecord> out = new ArrayList<>();
        try {
            for (Path dir : Store.children(store.snapshots)) {
                try {
                    out.add(store.loadSnapshot(dir));
                } catch (IOException ignored) {
                    // unreadable: listed as skipped by list()
                }
            }
        } catch (IOException e) {
            throw new EngineException(Kind.INTERNAL, "cannot list snapshots: " + e.getMessage(), e);
        }
        return out;
    }

    List<SnapshotInfo> list(Tenant tenant) throws EngineException {
        List<SnapshotInfo> out = new ArrayList<>();
        try {
            for (Path dir : Store.children(store.snapshots)) {
                try {
                    var rec = store.loadSnapshot(dir);
                    if (owned(tenant, rec)) out.add(rec.info());
                } catch (IOException e) {
                    LOG.log(System.Logger.Level.WARNING, "skipping unreadable snapshot " + dir + ": " + e.getMessage());
                }
            }
        } catch (IOException e) {
            throw new EngineException(Kind.INTERNAL, "cannot list snapshots: " + e.getMessage(), e);
        }
        return out;
    }

    private static boolean owned(Tenant tenant, Store.SnapshotRecord rec) {
        return tenant.id().equals(rec.tenant() == null ? Tenant.LOCAL.id() : rec.tenant());
    }

    Optional<Store.SnapshotRecord> byName(Tenant tenant, String name) throws EngineException {
        try {
            for (Path dir : Store.children(store.snapshots)) {
                try {
                    var rec = store.loadSnapshot(dir);
                    if (rec.name().equals(name) && owned(tenant, rec)) return Optional.of(rec);
                } catch (IOException ignored) { }
            }
        } catch (IOException e) {
            throw new EngineException(Kind.INTERNAL, "cannot list snapshots: " + e.getMessage(), e);
        }
        return Optional.empty();
    }

    Store.SnapshotRecord find(Tenant tenant, String ref) throws EngineException {
        Path dir = store.snapshotDir(ref);
        if (ID.matcher(ref).matches() && Files.isDirectory(dir)) {
            try {
                var rec = store.loadSnapshot(dir);
                if (owned(tenant, rec)) return rec;
            } catch (IOException e) {
                throw new EngineException(Kind.INTERNAL, "snapshot '" + ref + "' cannot be read: " + e.getMessage(), e);
            }
        }
        return byName(tenant, ref).orElseThrow(() -> new EngineException(Kind.NOT_FOUND, "no snapshot '" + ref
                + "'; list_workspaces shows the snapshots that exist"));
    }

}
