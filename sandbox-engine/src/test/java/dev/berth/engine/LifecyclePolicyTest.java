package dev.berth.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.berth.engine.namespace.NamespaceDriver;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The operator's lifecycle policy on real namespace sandboxes: what counts as idle, TTLs, per-tenant overrides. */
class LifecyclePolicyTest {
    static final Tenant A = new Tenant("alice", Tenant.Quota.UNLIMITED);
    static final Tenant B = new Tenant("bob", Tenant.Quota.UNLIMITED);
    Path home;
    Engine engine;

    void start(LifecyclePolicy server, Map<String, LifecyclePolicy> tenants) throws Exception {
        home = Files.createTempDirectory("berth-policy-");
        EngineConfig d = EngineConfig.defaults(home, List.of(new NamespaceDriver(home)));
        engine = Engine.start(d.withLifecycle(server, tenants, 8));
    }

    @AfterEach
    void stop() throws Exception {
        if (engine != null) engine.close();
        if (home != null) dev.berth.engine.spi.Trees.delete(home);
    }

    static void await(BooleanSupplier condition, String what) throws Exception {
        Await.until(what, condition::getAsBoolean);
    }

    WorkspaceState state(Tenant t, String id) {
        try {
            return engine.info(t, id).state();
        } catch (EngineException e) {
            return WorkspaceState.CLOSED;
        }
    }

    @Test
    void backgroundOutput_keepsPersistentWorkspaceAwake_thenIdleParks() throws Exception {
        start(new LifecyclePolicy(2, 0, 0), Map.of());
        String id = engine.open(A, OpenRequest.persistent("dev")).workspace().id();
        ProcessStatus p = engine.startBackground(A, RunRequest.of(id, "while true; do echo tick; sleep 0.3; done"));
        Instant first = engine.info(A, id).idleParkAt();
        assertNotNull(first, "a running persistent workspace shows when it would be parked");
        // the park deadline keeps moving while the process writes: two whole windows pass without a park
        Instant until = Instant.now().plusSeconds(5);
        while (Instant.now().isBefore(until)) {
            assertEquals(WorkspaceState.RUNNING, state(A, id), "parked although a background process was writing");
            Thread.sleep(100);
        }
        assertTrue(engine.info(A, id).idleParkAt().isAfter(first), "output pushes idle_park_at forward");
        engine.process(A, id, p.process(), null, null, 5, "KILL", 1024);
        await(() -> state(A, id) == WorkspaceState.PARKED, "the quiet workspace is parked");
        assertNull(engine.info(A, id).idleParkAt(), "a parked workspace has no park deadline");
    }

    @Test
    void ttl_closesEphemeralAfterItsRun_neverDuring() throws Exception {
        start(new LifecyclePolicy(0, 0, 2), Map.of());
        OpenResult o = engine.open(A, OpenRequest.ephemeral());
        String id = o.workspace().id();
        assertEquals(o.workspace().createdAt().plusSeconds(2), o.workspace().expiresAt());
        RunResult r = engine.run(A, RunRequest.of(id, "sleep 4; echo done"), OutputListener.NONE);
        assertEquals("done\n", r.stdout(), "the run outlived the TTL and was not cut short");
        assertNotNull(r.expiresAt());
        await(() -> state(A, id) == WorkspaceState.CLOSED && Files.notExists(home.resolve("workspaces").resolve(id)),
                "the expired workspace is closed and deleted after its run");
    }

    @Test
    void tenantOverride_neverParksThatTenant() throws Exception {
        start(new LifecyclePolicy(1, 0, 0), Map.of("bob", new LifecyclePolicy(0, 0, 0)));
        String a = engine.open(A, OpenRequest.persistent("a")).workspace().id();
        String b = engine.open(B, OpenRequest.persistent("b")).workspace().id();
        assertNull(engine.info(B, b).idleParkAt(), "bob's policy never parks");
        await(() -> state(A, a) == WorkspaceState.PARKED, "alice's idle workspace is parked");
        assertEquals(WorkspaceState.RUNNING, state(B, b));
    }

    @Test
    void maxLiveWorkspaces_fromThePolicy_refusedWithTheNumbers() throws Exception {
        home = Files.createTempDirectory("berth-policy-");
        EngineConfig d = EngineConfig.defaults(home, List.of(new NamespaceDriver(home)));
        engine = Engine.start(d.withLifecycle(LifecyclePolicy.DEFAULT, Map.of(), 1));
        engine.open(A, OpenRequest.ephemeral());
        var e = assertThrows(EngineException.class, () -> engine.open(B, OpenRequest.ephemeral()));
        assertEquals(EngineException.Kind.LIMIT, e.kind());
        assertTrue(e.getMessage().contains("1 are open (limit 1)"), e.getMessage());
    }

    @Test
    void negativeTimes_refused() {
        var e = assertThrows(IllegalArgumentException.class, () -> new LifecyclePolicy(-1, 0, 0));
        assertTrue(e.getMessage().contains("idle_park_s -1"), e.getMessage());
    }
}
