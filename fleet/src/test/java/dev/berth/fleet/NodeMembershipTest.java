package dev.berth.fleet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ExtendWith;

/** Joining, renewing, refusing a live node id, leaving and fencing, against the real etcd cluster. */
@ExtendWith(EtcdCluster.Shared.class)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class NodeMembershipTest {
    private EtcdCluster etcd;
    private EtcdStore store;
    private FleetKeys keys;

    @BeforeAll
    void start(EtcdCluster etcd) {
        this.etcd = etcd;
        this.store = etcd.store();
        this.keys = new FleetKeys(EtcdCluster.prefix("members"));
    }

    @AfterAll
    void stop() {
        if (store != null) store.close();
    }

    static NodeOffer offer(String id, String address) {
        return new NodeOffer(id, address, Map.of("zone", "a"), List.of("namespace"), false, "7.2.0", "test cpu", 4096, 2,
                List.of("developer"), Map.of("namespace", 1), 0, false, System.currentTimeMillis());
    }

    @Test
    void join_registersOffer_renewsPastTtl_leaveRemovesIt() throws InterruptedException {
        AtomicInteger offers = new AtomicInteger();
        try (var m = NodeMembership.join(store, keys, Duration.ofSeconds(2), () -> {
            offers.incrementAndGet();
            return offer("n-renew", "http://127.0.0.2:8080");
        }, why -> { }, Clock.systemUTC())) {
            var reg = NodeOffer.parse(store.get(keys.node("n-renew")).orElseThrow().value());
            assertEquals("http://127.0.0.2:8080", reg.address());
            assertEquals(List.of("namespace"), reg.levels());
            assertEquals(m.lease(), store.get(keys.node("n-renew")).orElseThrow().lease());
            // renewed every ~0.67 s: after 4 refreshes (> 2 s, the TTL) the registration still stands
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (offers.get() < 5 && System.nanoTime() < deadline) Thread.sleep(50);
            assertTrue(offers.get() >= 5, "the offer was refreshed " + offers.get() + " times");
            assertTrue(store.get(keys.node("n-renew")).isPresent());
            assertFalse(m.fenced());
            // cordoned by the operator: the next refresh says so; uncordoned: the one after
            assertTrue(NodeMembership.cordon(store, keys, "n-renew", true));
            int at = offers.get();
            while (offers.get() < at + 2 && System.nanoTime() < deadline + TimeUnit.SECONDS.toNanos(30)) Thread.sleep(50);
            assertTrue(NodeOffer.parse(store.get(keys.node("n-renew")).orElseThrow().value()).cordoned());
            NodeMembership.cordon(store, keys, "n-renew", false);
            at = offers.get();
            while (offers.get() < at + 2 && System.nanoTime() < deadline + TimeUnit.SECONDS.toNanos(30)) Thread.sleep(50);
            assertFalse(NodeOffer.parse(store.get(keys.node("n-renew")).orElseThrow().value()).cordoned());
        }
        assertTrue(store.get(keys.node("n-renew")).isEmpty(), "leaving revokes the lease and the registration");
    }

    @Test
    void join_idAlreadyLive_refusedAndTheFirstUntouched() {
        try (var first = NodeMembership.join(store, keys, Duration.ofSeconds(30), () -> offer("n-dup", "http://127.0.0.2:8080"),
                why -> { }, Clock.systemUTC())) {
            var e = assertThrows(NodeMembership.JoinRefused.class, () -> NodeMembership.join(store, keys, Duration.ofSeconds(30),
                    () -> offer("n-dup", "http://127.0.0.3:8080"), why -> { }, Clock.systemUTC()));
            assertTrue(e.getMessage().contains("node id 'n-dup' is already live in the fleet (registered by http://127.0.0.2:8080"), e.getMessage());
            var kv = store.get(keys.node("n-dup")).orElseThrow();
            assertEquals(first.lease(), kv.lease());
            assertEquals("http://127.0.0.2:8080", NodeOffer.parse(kv.value()).address());
        }
    }

    @Test
    void join_etcdUnreachable_namesEndpoint_writesNothing() {
        try (var dead = new EtcdStore(new EtcdSettings(List.of(URI.create("http://127.0.0.1:9")), null, null, null, Duration.ofSeconds(1)))) {
            var e = assertThrows(FleetStoreException.class, () -> NodeMembership.join(dead, keys, Duration.ofSeconds(5),
                    () -> offer("n-dead", "http://127.0.0.4:8080"), why -> { }, Clock.systemUTC()));
            assertTrue(e.getMessage().contains("http://127.0.0.1:9"), e.getMessage());
        }
        assertTrue(store.get(keys.node("n-dead")).isEmpty());
    }

    @Test
    void leaseRevokedElsewhere_fencesOnce() throws Exception {
        var fenced = new CompletableFuture<String>();
        try (var m = NodeMembership.join(store, keys, Duration.ofSeconds(3), () -> offer("n-gone", "http://127.0.0.5:8080"),
                fenced::complete, Clock.systemUTC())) {
            store.revoke(m.lease());
            String why = fenced.get(30, TimeUnit.SECONDS);
            assertTrue(why.contains("lease of node n-gone is gone"), why);
            assertTrue(m.fenced());
        }
    }

    @Test
    void etcdMemberPaused_nodeFencesBeforeItsLeaseCanExpire() throws Exception {
        // this node's only endpoint is member 2; pausing it is a partition of the node from etcd
        var fenced = new CompletableFuture<String>();
        try (var only = new EtcdStore(new EtcdSettings(List.of(etcd.endpoints().get(2)), null, null, null, Duration.ofMillis(500)));
             var m = NodeMembership.join(only, keys, Duration.ofSeconds(3), () -> offer("n-cut", "http://127.0.0.6:8080"),
                     fenced::complete, Clock.systemUTC())) {
            long cut = System.nanoTime();
            etcd.pause(2);
            try {
                String why = fenced.get(30, TimeUnit.SECONDS);
                long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - cut);
                assertTrue(why.contains("could not renew its lease"), why);
                // fenced within the TTL of the cut (its last renewal was at most a third of the TTL before it)
                assertTrue(tookMs < 3000, "fenced " + tookMs + " ms after the cut; the lease could expire 3000 ms after the last renewal");
            } finally {
                etcd.resume(2);
            }
        }
    }
}
