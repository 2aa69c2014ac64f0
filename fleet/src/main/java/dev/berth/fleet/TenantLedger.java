package dev.berth.fleet;

import java.time.Clock;
import java.util.Optional;

/**
 * A tenant's names and quota usage across the fleet, and the records of its workspaces, kept in etcd by transactions:
 * the usage counter, the name and the workspace record change together or not at all, and only if the usage counter
 * is still at the revision this node read. Two nodes opening at once for one tenant both read, both try; one commits,
 * the other re-reads and decides again against the new usage, so no update is lost and no quota is overrun
 * (TenantLedgerTest races two nodes). Thread-safe (it holds no state of its own but the store).
 *
 * <p>Keys: {@code tenants/<t>/usage} (JSON {@link Usage}), {@code tenants/<t>/names/<name>} (the workspace id),
 * {@code workspaces/<id>} ({@link WorkspaceRecord}).
 */
public final class TenantLedger {
    /** Attempts of one reservation under contention before it gives up with the reason; each re-reads. */
    public static final int MAX_ATTEMPTS = 32;
    private final FleetStore store;
    private final FleetKeys keys;
    private final Clock clock;

    public TenantLedger(FleetStore store, FleetKeys keys, Clock clock) {
        this.store = store;
        this.keys = keys;
        this.clock = clock;
    }

    /** What a tenant holds, or may hold ({@link Long#MAX_VALUE}: no limit). */
    public record Usage(long workspaces, long vcpus, @com.fasterxml.jackson.annotation.JsonProperty("memory_mib") long memoryMiB,
                        @com.fasterxml.jackson.annotation.JsonProperty("disk_mib") long diskMiB) {
        public static final Usage NONE = new Usage(0, 0, 0, 0);
        public static final Usage UNLIMITED = new Usage(Long.MAX_VALUE, Long.MAX_VALUE, Long.MAX_VALUE, Long.MAX_VALUE);

        Usage plus(Usage o, int sign) {
            return new Usage(workspaces + sign * o.workspaces, vcpus + sign * o.vcpus, memoryMiB + sign * o.memoryMiB, diskMiB + sign * o.diskMiB);
        }

        /** The first limit {@code this} is over, named with the numbers, or null. */
        String over(Usage limit, Usage held, Usage ask) {
            if (workspaces > limit.workspaces) return "workspaces: " + held.workspaces + " of " + limit.workspaces + " in use, 1 more asked";
            if (vcpus > limit.vcpus) return "vcpus: " + held.vcpus + " of " + limit.vcpus + " in use, " + ask.vcpus + " more asked";
            if (memoryMiB > limit.memoryMiB) return "memory_mib: " + held.memoryMiB + " of " + limit.memoryMiB + " in use, " + ask.memoryMiB + " more asked";
            if (diskMiB > limit.diskMiB) return "disk_mib: " + held.diskMiB + " of " + limit.diskMiB + " in use, " + ask.diskMiB + " more asked";
            return null;
        }
    }

    /** A reservation the fleet refuses: over quota, or the name taken; the message says which, with the numbers. */
    public static final class Refused extends RuntimeException {
        public Refused(String message) { super(message); }
    }

    /** The tenant's usage now, fleet-wide. */
    public Usage usage(String tenant) {
        return store.get(keys.usage(tenant)).map(kv -> EtcdStore.JSON.readValue(kv.value(), Usage.class)).orElse(Usage.NONE);
    }

    /**
     * Reserves a workspace for {@code tenant} on {@code node}: its name (null: unnamed) and its resources against
     * {@code limit}, and writes its record (epoch 1, state "open"). Throws {@link Refused} over quota or for a taken
     * name; {@link FleetStoreException} when etcd cannot commit (then nothing was reserved).
     */
    public WorkspaceRecord reserve(String tenant, String id, String name, String node, String level, int vcpus, long memoryMiB, long diskMiB,
                                   Usage limit) {
        Usage ask = new Usage(1, vcpus, memoryMiB, diskMiB);
        WorkspaceRecord rec = new WorkspaceRecord(WorkspaceRecord.FORMAT, id, tenant, name, node, 1, "open", null, level, vcpus, memoryMiB,
                diskMiB, clock.millis());
        String usageKey = keys.usage(tenant);
        for (int attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
            Optional<FleetStore.KeyValue> cur = store.get(usageKey);
            Usage held = cur.map(kv -> EtcdStore.JSON.readValue(kv.value(), Usage.class)).orElse(Usage.NONE);
            Usage next = held.plus(ask, 1);
            String over = next.over(limit, held, ask);
            if (over != null) throw new Refused("quota of tenant '" + tenant + "' across the fleet: " + over);
            Txn.Compare usageSame = cur.isPresent() ? new Txn.ModRevision(usageKey, cur.get().modRevision()) : new Txn.Absent(usageKey);
            Txn txn = name == null
                    ? Txn.when(usageSame, new Txn.Absent(keys.workspace(id)))
                    : Txn.when(usageSame, new Txn.Absent(keys.workspace(id)), new Txn.Absent(keys.name(tenant, name)));
            txn = txn.then(new Txn.Put(usageKey, EtcdStore.JSON.writeValueAsBytes(next), 0), new Txn.Put(keys.workspace(id), rec.json(), 0));
            if (name != null) txn = txn.then(new Txn.Put(keys.name(tenant, name), id));
            txn = txn.orElse(new Txn.Get(name == null ? keys.workspace(id) : keys.name(tenant, name)), new Txn.Get(keys.workspace(id)));
            var r = store.txn(txn);
            if (r.succeeded()) return rec;
            if (name != null && r.gets().get(0).isPresent()) {
                String holder = r.gets().get(0).get().text();
                throw new Refused("workspace name '" + name + "' is taken in tenant '" + tenant + "' across the fleet (by " + holder
                        + ownerOf(holder) + "); close it or choose another name");
            }
            if (r.gets().get(1).isPresent()) throw new Refused("workspace id " + id + " is already recorded in the fleet");
            // the usage moved under us: another node reserved or released; read again and decide again
        }
        throw new FleetStoreException("could not reserve for tenant '" + tenant + "' in " + MAX_ATTEMPTS
                + " attempts: the tenant's usage kept changing under concurrent opens; try again", true, null);
    }

    private String ownerOf(String id) {
        return store.get(keys.workspace(id)).map(kv -> " on node " + WorkspaceRecord.parse(kv.value()).owner()).orElse("");
    }

    /**
     * Releases a closed workspace: its name, its record and its share of the usage, together. Returns false when the
     * record is already gone (released twice: nothing changes).
     */
    public boolean release(String id) {
        for (int attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
            Optional<FleetStore.KeyValue> recKv = store.get(keys.workspace(id));
            if (recKv.isEmpty()) return false;
            WorkspaceRecord rec = WorkspaceRecord.parse(recKv.get().value());
            String usageKey = keys.usage(rec.tenant());
            Optional<FleetStore.KeyValue> cur = store.get(usageKey);
            Usage held = cur.map(kv -> EtcdStore.JSON.readValue(kv.value(), Usage.class)).orElse(Usage.NONE);
            Usage next = held.plus(new Usage(1, rec.vcpus(), rec.memoryMiB(), rec.diskMiB()), -1);
            Txn txn = Txn.when(new Txn.ModRevision(keys.workspace(id), recKv.get().modRevision()),
                    cur.isPresent() ? new Txn.ModRevision(usageKey, cur.get().modRevision()) : new Txn.Absent(usageKey))
                    .then(new Txn.Put(usageKey, EtcdStore.JSON.writeValueAsBytes(next), 0), new Txn.Delete(keys.workspace(id)));
            if (rec.name() != null) txn = txn.then(new Txn.Delete(keys.name(rec.tenant(), rec.name())));
            if (store.txn(txn).succeeded()) return true;
        }
        throw new FleetStoreException("could not release workspace " + id + " in " + MAX_ATTEMPTS + " attempts under contention", true, null);
    }
}
