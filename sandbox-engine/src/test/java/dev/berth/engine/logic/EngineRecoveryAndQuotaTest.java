package dev.berth.engine.logic;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.berth.engine.Engine;
import dev.berth.engine.api.EngineConfig;
import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.LifecyclePolicy;
import dev.berth.engine.api.OpenRequest;
import dev.berth.engine.api.OutputListener;
import dev.berth.engine.api.RunRequest;
import dev.berth.engine.api.Tenant;
import dev.berth.engine.api.WorkspaceInfo;
import dev.berth.engine.api.WorkspaceState;
import dev.berth.engine.spi.Trees;
import dev.berth.engine.testing.HostProcessDriver;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Recovery (a new engine on the same home) and the limits on open workspaces (the server's and a tenant's quota),
 * through the public engine API on the {@link HostProcessDriver} test double.
 */
class EngineRecoveryAndQuotaTest {
    static final Tenant A = new Tenant("alice", Tenant.Quota.UNLIMITED);
    static final Tenant B = new Tenant("bob", new Tenant.Quota(1, 64, 1 << 20, 1L << 40));
    Path home;
    Engine engine;

    Engine start(int maxWorkspaces) throws Exception {
        if (home == null) home = Files.createTempDirectory("berth-logic-");
        EngineConfig d = EngineConfig.defaults(home, List.of(new HostProcessDriver(home)));
        engine = Engine.start(d.withLifecycle(LifecyclePolicy.DEFAULT, Map.of(), maxWorkspaces));
        return engine;
    }

    @AfterEach
    void stop() throws Exception {
        if (engine != null) engine.close();
        if (home != null) Trees.delete(home);
    }

    @Test
    void restart_persistentBackParkedWithOwnerAndFiles_ephemeralGone() throws Exception {
        start(8);
        String p = engine.open(A, OpenRequest.persistent("keep")).workspace().id();
        engine.run(A, RunRequest.of(p, "echo kept > f"), OutputListener.NONE);
        String e = engine.open(A, OpenRequest.ephemeral()).workspace().id();
        engine.close();

        start(8);
        assertEquals(List.of(p), engine.list(A).stream().map(WorkspaceInfo::id).toList());
        assertEquals(WorkspaceState.PARKED, engine.info(A, p).state());
        assertTrue(engine.list(B).isEmpty(), "the owner must survive a restart");
        assertFalse(Files.exists(home.resolve("workspaces").resolve(e)), "an ephemeral workspace does not outlive its engine");
        var r = engine.run(A, RunRequest.of("keep", "cat f"), OutputListener.NONE);
        assertEquals("kept\n", r.stdout());
        assertTrue(r.resumed());
    }

    @Test
    void restart_corruptRecord_skippedAndLeftForTheOperator() throws Exception {
        start(8);
        String p = engine.open(A, OpenRequest.persistent("good")).workspace().id();
        String q = engine.open(A, OpenRequest.persistent("bad")).workspace().id();
        engine.close();
        Path meta = home.resolve("workspaces").resolve(q).resolve("workspace.meta");
        byte[] b = Files.readAllBytes(meta);
        b[b.length - 2] ^= 0x20;
        Files.write(meta, b);

        start(8);
        assertEquals(List.of(p), engine.list(A).stream().map(WorkspaceInfo::id).toList());
        assertTrue(Files.exists(meta), "an unreadable record is left for the operator, not deleted");
    }

    @Test
    void open_pastServerLimit_refusedNamingTheLimit() throws Exception {
        start(2);
        engine.open(A, OpenRequest.ephemeral());
        engine.open(A, OpenRequest.persistent("p"));
        var e = assertThrows(EngineException.class, () -> engine.open(A, OpenRequest.ephemeral()));
        assertEquals(EngineException.Kind.LIMIT, e.kind());
        assertTrue(e.getMessage().startsWith("cannot open another workspace: 2 are open (limit 2)"), e.getMessage());
        // parked workspaces are live too: parking does not make room, closing does
        engine.park(A, "p");
        assertThrows(EngineException.class, () -> engine.open(A, OpenRequest.ephemeral()));
        engine.closeWorkspace(A, "p", true);
        engine.open(A, OpenRequest.ephemeral());
        assertEquals(2, engine.list(A).size());
    }

    @Test
    void open_pastTenantQuota_refusedNamingTheQuota_otherTenantUnaffected() throws Exception {
        start(8);
        engine.open(B, OpenRequest.ephemeral());
        var e = assertThrows(EngineException.class, () -> engine.open(B, OpenRequest.ephemeral()));
        assertEquals(EngineException.Kind.LIMIT, e.kind());
        assertTrue(e.getMessage().contains("quota of tenant 'bob' exceeded (workspaces: 1 open, limit 1)"), e.getMessage());
        assertEquals(1, engine.list(B).size(), "a refused open creates nothing");
        engine.open(A, OpenRequest.ephemeral());
        engine.open(A, OpenRequest.ephemeral());
        assertEquals(2, engine.list(A).size());
    }

    /** The fleet's seam (issue 27): a refusal reaches the caller as is and leaves nothing; every removal is reported once. */
    @Test
    void admission_refusalUndoesTheOpen_closeAndFailedOpenReleaseOnce() throws Exception {
        start(8);
        var admitted = new java.util.concurrent.CopyOnWriteArrayList<String>();
        var released = new java.util.concurrent.CopyOnWriteArrayList<String>();
        engine.setAdmission(new dev.berth.engine.api.Admission() {
            @Override
            public void admit(Tenant t, String id, String name, String isolation, dev.berth.engine.spi.Resources r) throws EngineException {
                if ("taken".equals(name)) throw new EngineException(EngineException.Kind.CONFLICT, "workspace name 'taken' is taken across the fleet");
                admitted.add(id);
            }

            @Override
            public void released(String id) { released.add(id); }
        });
        var e = assertThrows(EngineException.class, () -> engine.open(A, OpenRequest.persistent("taken")));
        assertEquals(EngineException.Kind.CONFLICT, e.kind());
        assertEquals("workspace name 'taken' is taken across the fleet", e.getMessage());
        assertTrue(engine.list(A).isEmpty(), "a refused open leaves no workspace");
        assertEquals(1, released.size(), "the refused open is reported removed (releasing what was never admitted is a no-op)");
        String id = engine.open(A, OpenRequest.persistent("free")).workspace().id();
        assertEquals(List.of(id), admitted);
        engine.closeWorkspace(A, id, true);
        assertEquals(id, released.getLast());
        assertEquals(2, released.size());
    }
}
