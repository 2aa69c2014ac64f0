package dev.berth.fleet;

import java.time.Clock;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Marks the workspaces of lost nodes: a node is lost when its registration goes without a leave (its lease expired),
 * and every workspace it owned becomes {@code recovered: "node lost at T"} ({@link Ownership#markNodeLost}). Every
 * node runs one; marking is a compare-and-swap per record, so many nodes marking at once agree. A sweep at start (and
 * after a broken watch) catches losses that happened while no node watched.
 *
 * <p>A node that leaves cleanly ({@code berth node} stopped) also drops its registration; its persistent workspaces
 * are parked on its disk and are marked the same way, since no other node can serve them until state mobility
 * (issue 28) exists: "lost" means "not served by a live node", which is what a caller needs to know.
 *
 * <p>Threads: the store's watch thread calls {@link #onEvents}; a broken watch is re-established from the last seen
 * revision after a sweep, at most once a second.
 */
public final class NodeLossWatcher implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger("berth.fleet");
    private final FleetStore store;
    private final FleetKeys keys;
    private final Ownership ownership;
    private final Clock clock;
    private volatile AutoCloseable watch;
    private volatile boolean closed;
    private volatile long lastRevision;

    public NodeLossWatcher(FleetStore store, FleetKeys keys, Clock clock) {
        this.store = store;
        this.keys = keys;
        this.ownership = new Ownership(store, keys, clock);
        this.clock = clock;
    }

    /** Sweeps once and starts watching node registrations. */
    public NodeLossWatcher start() {
        lastRevision = store.txn(Txn.when()).revision();
        sweep();
        watch = store.watch(keys.nodes(), lastRevision, this::onEvents, this::onWatchError);
        return this;
    }

    /** Marks the workspaces of every owner that has no registration now; returns how many it marked. */
    public int sweep() {
        Set<String> live = new HashSet<>();
        for (var kv : store.range(keys.nodes())) live.add(kv.key().substring(keys.nodes().length()));
        Set<String> lost = new HashSet<>();
        for (WorkspaceRecord r : ownership.all()) {
            if (!live.contains(r.owner()) && !"recovered".equals(r.state())) lost.add(r.owner());
        }
        int n = 0;
        for (String node : lost) n += mark(node);
        return n;
    }

    private void onEvents(List<FleetStore.Event> events) {
        for (var e : events) {
            lastRevision = Math.max(lastRevision, e.kv().modRevision());
            if (e.deleted()) mark(e.kv().key().substring(keys.nodes().length()));
        }
    }

    private int mark(String node) {
        try {
            int n = ownership.markNodeLost(node, clock.instant());
            if (n > 0) LOG.log(System.Logger.Level.WARNING, "node " + node + " lost: " + n + " workspace(s) marked recovered");
            return n;
        } catch (RuntimeException ex) {
            LOG.log(System.Logger.Level.ERROR, "could not mark the workspaces of lost node " + node + ": " + ex.getMessage());
            return 0;
        }
    }

    private void onWatchError(Exception e) {
        if (closed) return;
        LOG.log(System.Logger.Level.WARNING, "node watch broke (" + e.getMessage() + "); re-establishing after a sweep");
        Thread.ofVirtual().name("berth-fleet-rewatch").start(() -> {
            while (!closed) {
                try {
                    Thread.sleep(1000);
                    sweep();
                    watch = store.watch(keys.nodes(), lastRevision, this::onEvents, this::onWatchError);
                    return;
                } catch (InterruptedException ie) {
                    return;
                } catch (RuntimeException re) {
                    LOG.log(System.Logger.Level.WARNING, "node watch not re-established yet: " + re.getMessage());
                }
            }
        });
    }

    @Override
    public void close() {
        closed = true;
        try {
            if (watch != null) watch.close();
        } catch (Exception e) {
            // closing a watch only ends its connection
        }
    }
}
