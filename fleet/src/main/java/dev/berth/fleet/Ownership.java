package dev.berth.fleet;

import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Who owns each workspace, with an epoch that every later state change checks. A change is a compare-and-swap on the
 * record's revision that also requires the writer to be the owner at the epoch it holds, so a node that comes back
 * after its epoch moved on is refused and learns why ({@link Stale}). A {@link #claim} raises the epoch and names a new
 * owner: exactly one of two racing claims wins (OwnershipTest). Node loss marks every workspace the lost node owned
 * {@code recovered} with what is known. Thread-safe.
 */
public final class Ownership {
    private final FleetStore store;
    private final FleetKeys keys;
    private final Clock clock;

    public Ownership(FleetStore store, FleetKeys keys, Clock clock) {
        this.store = store;
        this.keys = keys;
        this.clock = clock;
    }

    /** A change refused because the record moved on; the message names the epoch and owner it moved to. */
    public static final class Stale extends RuntimeException {
        public Stale(String message) { super(message); }
    }

    public Optional<WorkspaceRecord> get(String id) {
        return store.get(keys.workspace(id)).map(kv -> WorkspaceRecord.parse(kv.value()));
    }

    /** Every workspace record of the fleet (fleet status, list_workspaces fleet-wide). */
    public List<WorkspaceRecord> all() {
        List<WorkspaceRecord> out = new ArrayList<>();
        for (var kv : store.range(keys.workspaces())) out.add(WorkspaceRecord.parse(kv.value()));
        return out;
    }

    /**
     * Moves workspace {@code id} to {@code node} if it is still at {@code seenEpoch}: the new epoch is one higher.
     * Returns the new record, or throws {@link Stale} when another claim or change came first.
     */
    public WorkspaceRecord claim(String id, String node, long seenEpoch) {
        var kv = store.get(keys.workspace(id)).orElseThrow(() -> new Stale("workspace " + id + " is not recorded in the fleet"));
        WorkspaceRecord cur = WorkspaceRecord.parse(kv.value());
        if (cur.epoch() != seenEpoch) throw stale(id, seenEpoch, cur);
        WorkspaceRecord next = cur.with(node, cur.epoch() + 1, "open".equals(cur.state()) || "recovered".equals(cur.state()) ? "open" : cur.state(),
                null, clock.millis());
        if (!cas(kv, next)) throw stale(id, seenEpoch, get(id).orElse(cur));
        return next;
    }

    /** Sets the state of a workspace {@code node} owns at {@code epoch}; {@link Stale} when that is no longer so. */
    public WorkspaceRecord transition(String id, String node, long epoch, String state) {
        var kv = store.get(keys.workspace(id)).orElseThrow(() -> new Stale("workspace " + id + " is not recorded in the fleet"));
        WorkspaceRecord cur = WorkspaceRecord.parse(kv.value());
        if (!node.equals(cur.owner()) || cur.epoch() != epoch) throw stale(id, epoch, cur);
        WorkspaceRecord next = cur.with(node, epoch, state, null, clock.millis());
        if (!cas(kv, next)) throw stale(id, epoch, get(id).orElse(cur));
        return next;
    }

    /**
     * Marks every workspace {@code node} owns {@code recovered: "node lost at T"} (T: {@code lostAt}), each by its own
     * compare-and-swap (a record changed meanwhile is read again). Returns how many it marked.
     */
    public int markNodeLost(String node, Instant lostAt) {
        int marked = 0;
        for (var kv : store.range(keys.workspaces())) {
            for (int attempt = 0; attempt < TenantLedger.MAX_ATTEMPTS; attempt++) {
                WorkspaceRecord r = WorkspaceRecord.parse(kv.value());
                if (!node.equals(r.owner()) || "recovered".equals(r.state())) break;
                if (cas(kv, r.with(node, r.epoch(), "recovered", "node lost at " + lostAt, clock.millis()))) {
                    marked++;
                    break;
                }
                var again = store.get(kv.key());
                if (again.isEmpty()) break;
                kv = again.get();
            }
        }
        return marked;
    }

    /**
     * A node back after a restart settles what the fleet says it owns with what its engine recovered: a workspace it
     * still holds ({@code held}) and that was marked {@code recovered} at an epoch nobody moved is {@code parked}
     * again (its engine recovers persistent workspaces parked); one it no longer holds (an ephemeral workspace, gone
     * with the process) is released through {@code ledger}, name and quota with it. Returns {back, released}.
     */
    public int[] settleReturn(String node, java.util.function.Predicate<WorkspaceRecord> held, TenantLedger ledger) {
        int back = 0;
        int released = 0;
        for (WorkspaceRecord r : all()) {
            if (!node.equals(r.owner())) continue;
            try {
                if (!held.test(r)) {
                    if (ledger.release(r.id())) released++;
                } else if ("recovered".equals(r.state())) {
                    transition(r.id(), node, r.epoch(), "parked");
                    back++;
                }
            } catch (Stale e) {
                // claimed meanwhile: it is no longer this node's
            }
        }
        return new int[] {back, released};
    }

    private boolean cas(FleetStore.KeyValue seen, WorkspaceRecord next) {
        return store.txn(Txn.when(new Txn.ModRevision(seen.key(), seen.modRevision()))
                .then(new Txn.Put(seen.key(), next.json(), 0))).succeeded();
    }

    private static Stale stale(String id, long epoch, WorkspaceRecord now) {
        return new Stale("workspace " + id + " moved on: this node holds epoch " + epoch + ", the fleet has epoch " + now.epoch()
                + " owned by " + now.owner() + " (" + now.state() + "); this node gives it up");
    }
}
