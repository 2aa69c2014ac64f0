package dev.berth.engine;

import dev.berth.engine.api.EngineConfig;
import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.LifecyclePolicy;
import dev.berth.engine.api.OpenRequest;
import dev.berth.engine.api.OpenResult;
import dev.berth.engine.api.OutputListener;
import dev.berth.engine.api.ProcessStatus;
import dev.berth.engine.api.RunRequest;
import dev.berth.engine.api.RunResult;
import dev.berth.engine.api.Tenant;
import dev.berth.engine.api.WorkspaceState;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.berth.engine.namespace.NamespaceDriver;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
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
    final TestClock clock = new TestClock();

    void start(LifecyclePolicy server, Map<String, LifecyclePolicy> tenants) throws Exception {
        home = Files.createTempDirectory("berth-policy-");
        EngineConfig d = EngineConfig.defaults(home, List.of(new NamespaceDriver(home)));
        engine = Engine.start(d.withLifecycle(server, tenants, 8).withClock(clock));
    }

    /**
     * Applies the policy until {@code condition} holds: a round of the reaper's own thread may hold a workspace's
     * lock at the moment, and then a later round gets it.
     */
    void reapUntil(BooleanSupplier condition, String what) throws Exception {
        Await.until(what, () -> {
            engine.reapIdle();
            return condition.getAsBoolean();
        });
    }

    @AfterEach
    void stop() throws Exception {
        if (engine != null) engine.close();
        if (home != null) dev.berth.engine.spi.Trees.delete(home);
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
        ProcessStatus p = engine.startBackground(A, RunRequest.of(id, "while true; do echo tick; sleep 0.1; done"));
        Instant first = engine.info(A, id).idleParkAt();
        assertNotNull(first, "a running persistent workspace shows when it would be parked");
        // the park deadline keeps moving while the process writes: five seconds (two and a half windows) pass without a park
        for (int second = 0; second < 5; second++) {
            clock.advance(Duration.ofSeconds(1));
            Instant now = clock.instant();
            Await.until("the process writes after the clock moved", () -> !engine.info(A, id).idleParkAt().isBefore(now.plusSeconds(2)));
            engine.reapIdle();
            assertEquals(WorkspaceState.RUNNING, state(A, id), "parked although a background process was writing");
        }
        assertTrue(engine.info(A, id).idleParkAt().isAfter(first), "output pushes idle_park_at forward");
        engine.process(A, id, p.process(), null, null, 5, "KILL", 1024);
        clock.advance(Duration.ofSeconds(3));
        reapUntil(() -> state(A, id) == WorkspaceState.PARKED, "the quiet workspace is parked");
        assertNull(engine.info(A, id).idleParkAt(), "a parked workspace has no park deadline");
    }

    @Test
    void ttl_closesEphemeralAfterItsRun_neverDuring() throws Exception {
        start(new LifecyclePolicy(0, 0, 2), Map.of());
        OpenResult o = engine.open(A, OpenRequest.ephemeral());
        String id = o.workspace().id();
        assertEquals(o.workspace().createdAt().plusSeconds(2), o.workspace().expiresAt());
        var run = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
            try {
                return engine.run(A, RunRequest.of(id, "while [ ! -e /workspace/go ]; do sleep 0.05; done; echo done"), OutputListener.NONE);
            } catch (EngineException e) {
                throw new IllegalStateException(e);
            }
        });
        Await.until("the run is in flight", () -> engine.info(A, id).activeRuns() > 0);
        clock.advance(Duration.ofSeconds(3)); // past the TTL while the run is in flight
        engine.reapIdle();
        assertEquals(WorkspaceState.RUNNING, state(A, id), "closed in the middle of a run");
        engine.writeFile(A, id, "/workspace/go", new byte[0], false, null);
        RunResult r = run.get();
        assertEquals("done\n", r.stdout(), "the run outlived the TTL and was not cut short");
        assertNotNull(r.expiresAt());
        reapUntil(() -> state(A, id) == WorkspaceState.CLOSED && Files.notExists(home.resolve("workspaces").resolve(id)),
                "the expired workspace is closed and deleted after its run");
    }

    @Test
    void tenantOverride_neverParksThatTenant() throws Exception {
        start(new LifecyclePolicy(1, 0, 0), Map.of("bob", new LifecyclePolicy(0, 0, 0)));
        String a = engine.open(A, OpenRequest.persistent("a")).workspace().id();
        String b = engine.open(B, OpenRequest.persistent("b")).workspace().id();
        assertNull(engine.info(B, b).idleParkAt(), "bob's policy never parks");
        clock.advance(Duration.ofSeconds(2));
        reapUntil(() -> state(A, a) == WorkspaceState.PARKED, "alice's idle workspace is parked");
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
