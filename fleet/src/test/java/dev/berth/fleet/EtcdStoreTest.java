package dev.berth.fleet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ExtendWith;

/** The etcd store against a real 3-member etcd: reads, writes, transactions, leases, watches, unreachable endpoints. */
@ExtendWith(EtcdCluster.Shared.class)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class EtcdStoreTest {
    private EtcdCluster etcd;
    private EtcdStore store;
    private String p;

    @BeforeAll
    void start(EtcdCluster etcd) {
        this.etcd = etcd;
        this.store = etcd.store();
        this.p = EtcdCluster.prefix("store");
    }

    @AfterAll
    void stop() {
        if (store != null) store.close();
    }

    private static byte[] b(String s) { return s.getBytes(StandardCharsets.UTF_8); }

    @Test
    void put_get_range_delete_roundTrip() {
        long rev = store.put(p + "a/1", b("one"), 0);
        store.put(p + "a/2", b("two"), 0);
        store.put(p + "b", b("other"), 0);
        var kv = store.get(p + "a/1").orElseThrow();
        assertEquals("one", kv.text());
        assertEquals(rev, kv.modRevision());
        assertEquals(List.of(p + "a/1", p + "a/2"), store.range(p + "a/").stream().map(FleetStore.KeyValue::key).toList());
        assertTrue(store.delete(p + "a/1"));
        assertFalse(store.delete(p + "a/1"));
        assertTrue(store.get(p + "a/1").isEmpty());
    }

    @Test
    void txn_staleRevision_isRejectedAndReadsCurrent() {
        store.put(p + "cas", b("v1"), 0);
        long seen = store.get(p + "cas").orElseThrow().modRevision();
        var first = store.txn(Txn.when(new Txn.ModRevision(p + "cas", seen)).then(new Txn.Put(p + "cas", "v2")));
        assertTrue(first.succeeded());
        // a second writer that read the same revision loses, and its failure branch reads what is there now
        var stale = store.txn(Txn.when(new Txn.ModRevision(p + "cas", seen)).then(new Txn.Put(p + "cas", "lost"))
                .orElse(new Txn.Get(p + "cas")));
        assertFalse(stale.succeeded());
        assertEquals("v2", stale.gets().getFirst().orElseThrow().text());
        var create = store.txn(Txn.when(new Txn.Absent(p + "new")).then(new Txn.Put(p + "new", "x")));
        assertTrue(create.succeeded());
        assertFalse(store.txn(Txn.when(new Txn.Absent(p + "new")).then(new Txn.Put(p + "new", "y"))).succeeded());
    }

    @Test
    void lease_revoked_deletesItsKeys_keepAliveSaysGone() {
        long lease = store.grantLease(30);
        store.put(p + "leased", b("x"), lease);
        assertEquals(lease, store.get(p + "leased").orElseThrow().lease());
        assertTrue(store.keepAlive(lease) > 0);
        assertTrue(store.txn(Txn.when(new Txn.Lease(p + "leased", lease))).succeeded());
        store.revoke(lease);
        assertTrue(store.get(p + "leased").isEmpty());
        assertEquals(0, store.keepAlive(lease));
        var e = assertThrows(FleetStoreException.class, () -> store.put(p + "leased", b("x"), lease));
        assertTrue(e.getMessage().contains("lease not found"), e.getMessage());
        assertFalse(e.unavailable());
    }

    @Test
    void lease_notKeptAlive_expires() throws InterruptedException {
        long lease = store.grantLease(1);
        store.put(p + "short", b("x"), lease);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
        while (store.get(p + "short").isPresent() && System.nanoTime() < deadline) Thread.sleep(100);
        assertTrue(store.get(p + "short").isEmpty(), "a 1 s lease not renewed must expire within 15 s");
    }

    @Test
    void watch_seesPutsAndDeletesAfterRevision() throws Exception {
        long from = store.put(p + "w/seed", b("s"), 0);
        var seen = new LinkedBlockingQueue<FleetStore.Event>();
        try (AutoCloseable w = store.watch(p + "w/", from, seen::addAll, e -> { })) {
            store.put(p + "w/x", b("1"), 0);
            store.delete(p + "w/x");
            var put = seen.poll(20, TimeUnit.SECONDS);
            var del = seen.poll(20, TimeUnit.SECONDS);
            assertEquals(p + "w/x", put.kv().key());
            assertFalse(put.deleted());
            assertEquals("1", put.kv().text());
            assertTrue(del.deleted());
        }
    }

    @Test
    void deadEndpointFirst_movesToTheNext() {
        List<URI> eps = new java.util.ArrayList<>(List.of(URI.create("http://127.0.0.1:9")));
        eps.addAll(etcd.endpoints());
        try (var s = new EtcdStore(new EtcdSettings(eps, null, null, null, Duration.ofSeconds(2)))) {
            s.put(p + "failover", b("ok"), 0);
            assertEquals("ok", s.get(p + "failover").orElseThrow().text());
        }
    }

    @Test
    void unreachable_errorNamesTheEndpoint() {
        try (var s = new EtcdStore(new EtcdSettings(List.of(URI.create("http://127.0.0.1:9")), null, null, null, Duration.ofSeconds(2)))) {
            var e = assertThrows(FleetStoreException.class, () -> s.get("/x"));
            assertTrue(e.unavailable());
            assertTrue(e.getMessage().contains("etcd at http://127.0.0.1:9 cannot be reached"), e.getMessage());
        }
    }
}
