package dev.berth.fleet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Fleet-wide names, quotas and ownership under concurrency: two "nodes" (two store clients, each on its own etcd
 * member first) open for one tenant at once; the real etcd's transactions must lose no update.
 */
@ExtendWith(EtcdCluster.Shared.class)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class TenantLedgerTest {
    private EtcdStore a;
    private EtcdStore b;
    private FleetKeys keys;

    @BeforeAll
    void start(EtcdCluster etcd) {
        var eps = etcd.endpoints();
        a = new EtcdStore(EtcdSettings.plain(List.of(eps.get(0), eps.get(1), eps.get(2))));
        b = new EtcdStore(EtcdSettings.plain(List.of(eps.get(1), eps.get(2), eps.get(0))));
        keys = new FleetKeys(EtcdCluster.prefix("ledger"));
    }

    @AfterAll
    void stop() {
        if (a != null) a.close();
        if (b != null) b.close();
    }

    /** Runs every task at once (released together), bounded in time; returns each one's result or exception. */
    private static List<Object> race(List<Callable<Object>> tasks) throws InterruptedException {
        ExecutorService pool = Executors.newFixedThreadPool(tasks.size());
        CountDownLatch go = new CountDownLatch(1);
        List<Future<Object>> fs = new ArrayList<>();
        for (var t : tasks) fs.add(pool.submit(() -> {
            go.await();
            return t.call();
        }));
        go.countDown();
        List<Object> out = new ArrayList<>();
        for (var f : fs) {
            try {
                out.add(f.get(60, TimeUnit.SECONDS));
            } catch (java.util.concurrent.ExecutionException e) {
                out.add(e.getCause());
            } catch (java.util.concurrent.TimeoutException e) {
                throw new AssertionError("a reservation hung", e);
            }
        }
        pool.shutdownNow();
        return out;
    }

    @Test
    void concurrentOpensOnTwoNodes_quotaHoldsExactly_noLostUpdate() throws Exception {
        var la = new TenantLedger(a, keys, Clock.systemUTC());
        var lb = new TenantLedger(b, keys, Clock.systemUTC());
        var limit = new TenantLedger.Usage(5, Long.MAX_VALUE, 5 * 512, Long.MAX_VALUE);
        List<Callable<Object>> tasks = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            var ledger = i % 2 == 0 ? la : lb;
            String node = i % 2 == 0 ? "na" : "nb";
            String id = "ws-q" + i;
            tasks.add(() -> ledger.reserve("t-quota", id, null, node, "namespace", 1, 512, 1024, limit));
        }
        var results = race(tasks);
        long won = results.stream().filter(r -> r instanceof WorkspaceRecord).count();
        var refusals = results.stream().filter(r -> r instanceof TenantLedger.Refused).map(r -> ((Exception) r).getMessage()).toList();
        assertEquals(5, won, "exactly the quota's 5 opens succeed: " + results);
        assertEquals(7, refusals.size(), results.toString());
        assertTrue(refusals.getFirst().contains("quota of tenant 't-quota' across the fleet: workspaces: 5 of 5 in use, 1 more asked"),
                refusals.getFirst());
        assertEquals(new TenantLedger.Usage(5, 5, 2560, 5120), la.usage("t-quota"), "the counter equals what was granted");
        // a release on one node frees the slot for the other
        String winner = results.stream().filter(r -> r instanceof WorkspaceRecord).map(r -> ((WorkspaceRecord) r).id()).findFirst().orElseThrow();
        assertTrue(la.release(winner));
        assertFalse(lb.release(winner), "released twice: nothing changes");
        assertEquals(4, lb.usage("t-quota").workspaces());
        lb.reserve("t-quota", "ws-q-after", null, "nb", "namespace", 1, 512, 1024, limit);
        assertEquals(5, la.usage("t-quota").workspaces());
    }

    @Test
    void sameNameOnTwoNodesAtOnce_exactlyOneWins_theOtherToldWho() throws Exception {
        var la = new TenantLedger(a, keys, Clock.systemUTC());
        var lb = new TenantLedger(b, keys, Clock.systemUTC());
        var results = race(List.of(
                () -> la.reserve("t-names", "ws-na", "build", "na", "namespace", 1, 512, 0, TenantLedger.Usage.UNLIMITED),
                () -> lb.reserve("t-names", "ws-nb", "build", "nb", "namespace", 1, 512, 0, TenantLedger.Usage.UNLIMITED)));
        assertEquals(1, results.stream().filter(r -> r instanceof WorkspaceRecord).count(), results.toString());
        var refused = (TenantLedger.Refused) results.stream().filter(r -> r instanceof TenantLedger.Refused).findFirst().orElseThrow();
        assertTrue(refused.getMessage().matches("workspace name 'build' is taken in tenant 't-names' across the fleet \\(by ws-n[ab] on node n[ab]\\).*"),
                refused.getMessage());
        assertEquals(1, la.usage("t-names").workspaces(), "the loser's usage was not counted");
        // the same name in another tenant is free
        la.reserve("t-other", "ws-other", "build", "na", "namespace", 1, 512, 0, TenantLedger.Usage.UNLIMITED);
    }

    @Test
    void twoNodesRaceToClaimOneWorkspace_exactlyOneWins_theLoserIsStale() throws Exception {
        var ledger = new TenantLedger(a, keys, Clock.systemUTC());
        var rec = ledger.reserve("t-own", "ws-own", null, "n-old", "namespace", 1, 512, 0, TenantLedger.Usage.UNLIMITED);
        var oa = new Ownership(a, keys, Clock.systemUTC());
        var ob = new Ownership(b, keys, Clock.systemUTC());
        var results = race(List.of(() -> oa.claim("ws-own", "na", rec.epoch()), () -> ob.claim("ws-own", "nb", rec.epoch())));
        var won = (WorkspaceRecord) results.stream().filter(r -> r instanceof WorkspaceRecord).findFirst().orElseThrow(() -> new AssertionError(results));
        assertEquals(1, results.stream().filter(r -> r instanceof Ownership.Stale).count(), results.toString());
        assertEquals(2, won.epoch());
        assertEquals(won.owner(), oa.get("ws-own").orElseThrow().owner());
        // the old owner, back after its epoch moved on, is refused and told why
        var e = assertThrows(Ownership.Stale.class, () -> oa.transition("ws-own", "n-old", 1, "parked"));
        assertTrue(e.getMessage().contains("this node holds epoch 1, the fleet has epoch 2 owned by " + won.owner()), e.getMessage());
        assertEquals("parked", ob.transition("ws-own", won.owner(), 2, "parked").state());
    }

    @Test
    void nodeLost_marksOnlyItsWorkspacesRecovered() {
        var ledger = new TenantLedger(a, keys, Clock.systemUTC());
        ledger.reserve("t-lost", "ws-l1", "one", "n-lost", "namespace", 1, 512, 0, TenantLedger.Usage.UNLIMITED);
        ledger.reserve("t-lost", "ws-l2", null, "n-lost", "namespace", 1, 512, 0, TenantLedger.Usage.UNLIMITED);
        ledger.reserve("t-lost", "ws-l3", null, "n-alive", "namespace", 1, 512, 0, TenantLedger.Usage.UNLIMITED);
        var own = new Ownership(b, keys, Clock.systemUTC());
        Instant at = Instant.parse("2026-12-06T06:00:00Z");
        assertEquals(2, own.markNodeLost("n-lost", at));
        assertEquals(0, own.markNodeLost("n-lost", at), "marking again changes nothing");
        var l1 = own.get("ws-l1").orElseThrow();
        assertEquals("recovered", l1.state());
        assertEquals("node lost at 2026-12-06T06:00:00Z", l1.recovered());
        assertEquals("n-lost", l1.owner(), "still its owner: it comes back when the node returns");
        assertEquals("open", own.get("ws-l3").orElseThrow().state());
    }

    @Test
    void watcher_nodeRegistrationExpires_itsWorkspacesMarked() throws Exception {
        var watchKeys = new FleetKeys(keys.prefix() + "watch/");
        var ledger = new TenantLedger(a, watchKeys, Clock.systemUTC());
        long lease = a.grantLease(2);
        a.put(watchKeys.node("n-short"), NodeMembershipTest.offer("n-short", "http://127.0.0.7:1").json(), lease);
        ledger.reserve("t-w", "ws-w1", null, "n-short", "namespace", 1, 512, 0, TenantLedger.Usage.UNLIMITED);
        ledger.reserve("t-w", "ws-w0", null, "n-never", "namespace", 1, 512, 0, TenantLedger.Usage.UNLIMITED);
        try (var w = new NodeLossWatcher(b, watchKeys, Clock.systemUTC()).start()) {
            var own = new Ownership(a, watchKeys, Clock.systemUTC());
            assertEquals("recovered", own.get("ws-w0").orElseThrow().state(), "the start sweep marks an owner with no registration");
            assertEquals("open", own.get("ws-w1").orElseThrow().state());
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (!"recovered".equals(own.get("ws-w1").orElseThrow().state()) && System.nanoTime() < deadline) Thread.sleep(50);
            var r = own.get("ws-w1").orElseThrow();
            assertEquals("recovered", r.state(), "marked when n-short's 2 s lease expired");
            assertTrue(r.recovered().startsWith("node lost at 20"), r.recovered());
        }
    }

    @Test
    void status_listsLiveNodesAndWorkspacesPerOwner() throws Exception {
        var statusKeys = new FleetKeys(keys.prefix() + "status/");
        try (var m = NodeMembership.join(a, statusKeys, java.time.Duration.ofSeconds(30),
                () -> NodeMembershipTest.offer("n-up", "http://127.0.0.2:8080"), why -> { }, Clock.systemUTC())) {
            var ledger = new TenantLedger(a, statusKeys, Clock.systemUTC());
            ledger.reserve("t-s", "ws-s1", null, "n-up", "namespace", 1, 512, 0, TenantLedger.Usage.UNLIMITED);
            ledger.reserve("t-s", "ws-s2", null, "n-gone", "namespace", 1, 512, 0, TenantLedger.Usage.UNLIMITED);
            String s = FleetStatus.render(b, statusKeys, Clock.systemUTC());
            assertTrue(s.contains("1 live node(s), 2 workspace(s)"), s);
            assertTrue(s.matches("(?s).*\\nn-up +http://127\\.0\\.0\\.2:8080 +namespace +4096 +2 +0 +\\{namespace=1\\} +no .*"), s);
            assertTrue(s.contains("n-up: {open=1}") && s.contains("n-gone (not live): {open=1}"), s);
        }
    }
}
