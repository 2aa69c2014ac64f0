package dev.berth.fleet;

import java.time.Clock;
import java.time.Duration;
import java.util.function.Consumer;
import java.util.function.Supplier;

/**
 * This node's membership of the fleet: its registration at {@code <prefix>nodes/<id>} under a lease of its own, the
 * renewal of that lease, and the refresh of its offer. {@link #join} either registers or refuses (a node id already
 * live, an unreachable etcd), never half-joins: a lease granted for a refused registration is revoked at once.
 *
 * <p>Threads: one virtual thread renews the lease every third of its TTL and rewrites the offer, only while the key
 * is still attached to this node's lease (a transaction), so a node whose lease was lost never overwrites a successor's
 * registration. A second one, the watchdog, fences the node when no renewal has been sent-and-answered for
 * {@link #fenceAfter} (two thirds of the TTL, counted from the sending of the last good renewal: before the lease can
 * expire on etcd's clock, whatever the local clock's offset); etcd saying the lease is gone fences too. Fencing calls
 * {@code onFence} once with the reason: the node must stop serving its persistent workspaces (docs/fleet.md,
 * "Fencing"). A fenced node stays fenced; it rejoins only by restarting.
 */
public final class NodeMembership implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger("berth.fleet");
    private final FleetStore store;
    private final FleetKeys keys;
    private final String nodeId;
    private final long lease;
    private final Duration ttl;
    private final Supplier<NodeOffer> offers;
    private final Consumer<String> onFence;
    private final Clock clock;
    private final Thread renewer;
    private final Thread watchdog;
    private volatile boolean fenced;
    private volatile boolean closed;
    private volatile long lastRenewedMs;

    private NodeMembership(FleetStore store, FleetKeys keys, String nodeId, long lease, Duration ttl, Supplier<NodeOffer> offers,
                           Consumer<String> onFence, Clock clock) {
        this.store = store;
        this.keys = keys;
        this.nodeId = nodeId;
        this.lease = lease;
        this.ttl = ttl;
        this.offers = offers;
        this.onFence = onFence;
        this.clock = clock;
        this.lastRenewedMs = clock.millis();
        this.renewer = Thread.ofVirtual().name("berth-fleet-lease-" + nodeId).unstarted(this::renewLoop);
        this.watchdog = Thread.ofVirtual().name("berth-fleet-fence-" + nodeId).unstarted(this::watchdog);
    }

    /**
     * Registers this node and starts renewing; throws {@link JoinRefused} when the id is live elsewhere and
     * {@link FleetStoreException} when etcd cannot be reached (the message names the endpoint).
     */
    public static NodeMembership join(FleetStore store, FleetKeys keys, Duration ttl, Supplier<NodeOffer> offers,
                                      Consumer<String> onFence, Clock clock) {
        NodeOffer first = offers.get().withCordoned(store.get(keys.cordon(offers.get().id())).isPresent());
        long lease = store.grantLease(ttl.toSeconds());
        String key = keys.node(first.id());
        FleetStore.TxnResult r;
        try {
            r = store.txn(Txn.when(new Txn.Absent(key)).then(new Txn.Put(key, first.json(), lease)).orElse(new Txn.Get(key)));
        } catch (RuntimeException e) {
            revokeQuietly(store, lease);
            throw e;
        }
        if (!r.succeeded()) {
            revokeQuietly(store, lease);
            throw refused(first.id(), r.gets().getFirst().orElse(new FleetStore.KeyValue(key, new byte[0], 0, 0, 0, 0)), store, ttl);
        }
        NodeMembership m = new NodeMembership(store, keys, first.id(), lease, ttl, offers, onFence, clock);
        m.renewer.start();
        m.watchdog.start();
        LOG.log(System.Logger.Level.INFO, "joined the fleet as " + first.id() + " (lease " + Long.toHexString(lease) + ", ttl "
                + ttl.toSeconds() + " s, " + store.describe() + ")");
        return m;
    }

    /**
     * Refuses early, before a node spends its start on an engine: an unreachable etcd (FleetStoreException) or a node id
     * live now (JoinRefused). Advisory: {@link #join}'s transaction is what keeps two nodes from one id.
     */
    public static void precheck(FleetStore store, FleetKeys keys, String nodeId, Duration ttl) {
        var live = store.get(keys.node(nodeId));
        if (live.isPresent()) throw refused(nodeId, live.get(), store, ttl);
    }

    private static JoinRefused refused(String id, FleetStore.KeyValue kv, FleetStore store, Duration ttl) {
        String holder;
        try {
            holder = NodeOffer.parse(kv.value()).address();
        } catch (RuntimeException e) {
            holder = "?";
        }
        return new JoinRefused("node id '" + id + "' is already live in the fleet (registered by " + holder + " in " + store.describe()
                + "); stop that node, wait for its lease to expire (at most " + ttl.toSeconds() + " s after it stopped), or choose"
                + " another fleet.node_id");
    }

    public String nodeId() { return nodeId; }

    public long lease() { return lease; }

    /** Whether this node has fenced itself (lease lost or not renewable in time); it never unfences. */
    public boolean fenced() { return fenced; }

    /** How long renewal may fail before the node fences itself: two thirds of the TTL. */
    public Duration fenceAfter() { return ttl.multipliedBy(2).dividedBy(3); }

    private void renewLoop() {
        long every = Math.max(200, ttl.toMillis() / 3);
        while (!closed && !fenced) {
            try {
                Thread.sleep(every);
            } catch (InterruptedException e) {
                return;
            }
            if (closed) return;
            // etcd restarts the TTL when the renewal arrives, which is after this instant: a safe lower bound
            long sentAt = clock.millis();
            try {
                long left = store.keepAlive(lease);
                if (left <= 0) {
                    fence("the lease of node " + nodeId + " is gone from etcd (expired or revoked)");
                    return;
                }
                lastRenewedMs = sentAt;
                refresh();
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "lease renewal failed (" + (clock.millis() - lastRenewedMs) + " ms since the last): "
                        + e.getMessage());
            }
        }
    }

    /**
     * Fences at {@code lastRenewed + fenceAfter} unless a renewal came in between, however long a renewal request
     * hangs: the renewer alone could sit in a request past the lease's expiry.
     */
    private void watchdog() {
        while (!closed && !fenced) {
            long due = lastRenewedMs + fenceAfter().toMillis();
            long now = clock.millis();
            if (now >= due) {
                fence("node " + nodeId + " could not renew its lease for " + (now - lastRenewedMs) + " ms (limit " + fenceAfter().toMillis()
                        + " ms, before the lease can expire at " + ttl.toMillis() + " ms)");
                return;
            }
            try {
                Thread.sleep(Math.min(due - now, 100));
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    /** Rewrites this node's offer, only while its key is still attached to this node's lease. */
    public void refresh() {
        String key = keys.node(nodeId);
        NodeOffer offer = offers.get().withCordoned(store.get(keys.cordon(nodeId)).isPresent());
        store.txn(Txn.when(new Txn.Lease(key, lease)).then(new Txn.Put(key, offer.json(), lease)));
    }

    /**
     * Cordons ({@code on}) or uncordons a node, live or not: placement skips a cordoned node; its workspaces stay. The
     * node's offer shows it from its next refresh. Returns whether the node is live now.
     */
    public static boolean cordon(FleetStore store, FleetKeys keys, String nodeId, boolean on) {
        if (on) store.put(keys.cordon(nodeId), "cordoned".getBytes(java.nio.charset.StandardCharsets.UTF_8), 0);
        else store.delete(keys.cordon(nodeId));
        return store.get(keys.node(nodeId)).isPresent();
    }

    private synchronized void fence(String why) {
        if (fenced) return;
        fenced = true;
        LOG.log(System.Logger.Level.ERROR, "fenced: " + why);
        onFence.accept(why);
    }

    /** Leaves the fleet: stops renewing and revokes the lease (the registration goes with it). */
    @Override
    public void close() {
        if (closed) return;
        closed = true;
        renewer.interrupt();
        watchdog.interrupt();
        try {
            renewer.join(Duration.ofSeconds(5));
            watchdog.join(Duration.ofSeconds(5));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (!fenced) revokeQuietly(store, lease);
    }

    private static void revokeQuietly(FleetStore store, long lease) {
        try {
            store.revoke(lease);
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "could not revoke lease " + Long.toHexString(lease) + ": " + e.getMessage());
        }
    }

    /** A join the fleet refuses (the node id is live elsewhere); the message says what to do. */
    public static final class JoinRefused extends RuntimeException {
        public JoinRefused(String message) { super(message); }
    }
}
