package dev.berth.engine;

import dev.berth.engine.api.EngineConfig;
import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.LifecyclePolicy;
import dev.berth.engine.api.OpenRequest;
import dev.berth.engine.api.OpenResult;
import dev.berth.engine.api.OutputListener;
import dev.berth.engine.api.RunRequest;
import dev.berth.engine.api.Tenant;
import dev.berth.engine.api.WorkspaceInfo;
import dev.berth.engine.api.WorkspaceState;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import dev.berth.engine.spi.Trees;
import dev.berth.engine.testing.HostProcessDriver;
import dev.berth.engine.testing.ManualClock;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The idle reaper on the {@link HostProcessDriver} test double and a hand-moved clock: idle persistent workspaces are
 * parked, idle ephemeral ones closed, and nothing before its time. In this package only because
 * {@link Engine#reapIdle()} is package-private; everything else goes through the public API.
 */
class EngineLogicReaperTest {
    static final Tenant A = new Tenant("alice", Tenant.Quota.UNLIMITED);
    final ManualClock clock = new ManualClock();
    Path home;
    Engine engine;

    void start(LifecyclePolicy policy) throws Exception {
        home = Files.createTempDirectory("berth-logic-");
        EngineConfig d = EngineConfig.defaults(home, List.of(new HostProcessDriver(home)));
        engine = Engine.start(d.withLifecycle(policy, Map.of(), 8).withClock(clock));
    }

    @AfterEach
    void stop() throws Exception {
        if (engine != null) engine.close();
        if (home != null) Trees.delete(home);
    }

    /** Reaps until {@code done}: a round of the reaper's own thread may hold a workspace's lock at that moment. */
    void reapUntil(String what, java.util.function.BooleanSupplier done) throws Exception {
        Await.until(what, () -> {
            engine.reapIdle();
            return done.getAsBoolean();
        });
    }

    @Test
    void reapIdle_pastTheWindows_persistentParkedAndEphemeralClosed() throws Exception {
        start(new LifecyclePolicy(10, 20, 0));
        String p = engine.open(A, OpenRequest.persistent("sleepy")).workspace().id();
        String e = engine.open(A, OpenRequest.ephemeral()).workspace().id();

        clock.advance(Duration.ofSeconds(9));
        engine.reapIdle();
        assertEquals(WorkspaceState.RUNNING, engine.info(A, p).state(), "parked before its idle window passed");
        assertEquals(2, engine.list(A).size());

        clock.advance(Duration.ofSeconds(2));
        reapUntil("the idle persistent workspace is parked", () -> state(p) == WorkspaceState.PARKED);
        assertEquals(WorkspaceState.RUNNING, engine.info(A, e).state(), "the ephemeral one's window is longer");

        clock.advance(Duration.ofSeconds(10));
        reapUntil("the idle ephemeral workspace is closed", () -> state(e) == WorkspaceState.CLOSED);
        assertFalse(Files.exists(home.resolve("workspaces").resolve(e)));
        assertEquals(List.of(p), engine.list(A).stream().map(WorkspaceInfo::id).toList(), "a parked one is never closed by a timer");
    }

    @Test
    void reapIdle_aRunMovesTheWindow() throws Exception {
        start(new LifecyclePolicy(10, 0, 0));
        String p = engine.open(A, OpenRequest.persistent("busy")).workspace().id();
        clock.advance(Duration.ofSeconds(8));
        engine.run(A, RunRequest.of(p, "true"), OutputListener.NONE);
        clock.advance(Duration.ofSeconds(8));
        engine.reapIdle();
        assertEquals(WorkspaceState.RUNNING, engine.info(A, p).state(), "parked 8 s after a run with a 10 s window");
        clock.advance(Duration.ofSeconds(3));
        reapUntil("the workspace is parked once idle for the window", () -> state(p) == WorkspaceState.PARKED);
    }

    @Test
    void reapIdle_ttl_closesEphemeralWhileActive() throws Exception {
        start(new LifecyclePolicy(0, 0, 5));
        OpenResult o = engine.open(A, OpenRequest.ephemeral());
        String e = o.workspace().id();
        assertEquals(o.workspace().createdAt().plusSeconds(5), o.workspace().expiresAt());
        clock.advance(Duration.ofSeconds(4));
        engine.run(A, RunRequest.of(e, "true"), OutputListener.NONE);
        clock.advance(Duration.ofSeconds(2));
        reapUntil("the expired workspace is closed although it was used a moment ago", () -> state(e) == WorkspaceState.CLOSED);
    }

    WorkspaceState state(String id) {
        try {
            return engine.info(A, id).state();
        } catch (EngineException ex) {
            return WorkspaceState.CLOSED;
        }
    }
}
