package dev.berth.engine;

import dev.berth.engine.api.EngineConfig;
import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.HomeOwnedException;
import dev.berth.engine.api.LifecyclePolicy;
import dev.berth.engine.api.OpenRequest;
import dev.berth.engine.api.OpenResult;
import dev.berth.engine.api.OutputListener;
import dev.berth.engine.api.RunRequest;
import dev.berth.engine.api.RunResult;
import dev.berth.engine.api.SnapshotInfo;
import dev.berth.engine.api.Tenant;
import dev.berth.engine.api.WorkspaceInfo;
import dev.berth.engine.api.WorkspaceState;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.berth.engine.namespace.NamespaceDriver;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The engine as a library: lifecycle rules, tenancy, quotas and recovery, on real namespace sandboxes. */
class EngineLifecycleTest {
    static final Tenant A = new Tenant("alice", Tenant.Quota.UNLIMITED);
    static final Tenant B = new Tenant("bob", new Tenant.Quota(1, 64, 1 << 20, 1L << 40));
    Path home;
    Engine engine;

    @BeforeEach
    void start() throws Exception {
        home = Files.createTempDirectory("berth-engine-");
        engine = Engine.start(config());
    }

    EngineConfig config() {
        return EngineConfig.defaults(home, List.of(new NamespaceDriver(home)));
    }

    @AfterEach
    void stop() throws Exception {
        engine.close();
        dev.berth.engine.spi.Trees.delete(home);
    }

    String sh(Tenant t, String ws, String cmd) throws EngineException {
        return engine.run(t, RunRequest.of(ws, cmd), OutputListener.NONE).stdout();
    }

    /**
     * A workspace outlives the thread that opened (or resumed) it: MCP tool handlers run on pooled threads that are
     * retired when idle, and a sandbox tied to its starting thread (bubblewrap's --die-with-parent) died with them.
     */
    @Test
    void sandboxOutlivesTheThreadThatStartedIt() throws Exception {
        String[] id = new String[1];
        Thread opener = Thread.ofPlatform().start(() -> {
            try {
                id[0] = engine.open(A, OpenRequest.persistent("short-lived-caller")).workspace().id();
            } catch (EngineException e) {
                throw new IllegalStateException(e);
            }
        });
        opener.join();
        assertTrue(id[0] != null, "open failed on its thread");
        // the run lasts long enough for a death signal sent when the opener ended to have landed
        RunResult r = engine.run(A, RunRequest.of(id[0], "sleep 0.5; echo alive"), OutputListener.NONE);
        assertEquals("alive\n", r.stdout(), r.toString());
        assertEquals(null, r.recovered(), "the sandbox had to be restarted: it died with the thread that opened it");
    }

    @Test
    void otherTenant_cannotSeeOrTouchWorkspaceOrSnapshot() throws Exception {
        String id = engine.open(A, OpenRequest.persistent("proj")).workspace().id();
        sh(A, id, "echo alice > secret.txt");
        SnapshotInfo snap = engine.snapshot(A, "proj", "alice-snap");

        assertTrue(engine.list(B).isEmpty());
        assertTrue(engine.snapshots(B).isEmpty());
        for (String ref : List.of(id, "proj")) {
            String expected = "no workspace '" + ref + "'";
            assertTrue(assertThrows(EngineException.class, () -> sh(B, ref, "cat secret.txt")).getMessage().startsWith(expected));
            assertTrue(assertThrows(EngineException.class, () -> engine.park(B, ref)).getMessage().startsWith(expected));
            assertTrue(assertThrows(EngineException.class, () -> engine.snapshot(B, ref, null)).getMessage().startsWith(expected));
            assertTrue(assertThrows(EngineException.class, () -> engine.closeWorkspace(B, ref, true)).getMessage().startsWith(expected));
            assertTrue(assertThrows(EngineException.class, () -> engine.sandboxOf(B, ref)).getMessage().startsWith(expected));
        }
        for (String ref : List.of(snap.id(), "alice-snap")) {
            var e = assertThrows(EngineException.class, () -> engine.open(B, new OpenRequest(null, null, ref, null, null)));
            assertEquals(EngineException.Kind.NOT_FOUND, e.kind());
            var d = assertThrows(EngineException.class, () -> engine.deleteSnapshot(B, ref));
            assertEquals(EngineException.Kind.NOT_FOUND, d.kind());
        }
        // the same name is free for another tenant, and is another workspace
        String bobs = engine.open(B, OpenRequest.persistent("proj")).workspace().id();
        assertFalse(bobs.equals(id));
        assertEquals("", sh(B, "proj", "cat secret.txt 2>/dev/null; true"));
        assertEquals("alice\n", sh(A, "proj", "cat secret.txt"));
    }

    @Test
    void quota_exceeded_refusedNamingTheQuota() throws Exception {
        engine.open(B, OpenRequest.ephemeral());
        var e = assertThrows(EngineException.class, () -> engine.open(B, OpenRequest.ephemeral()));
        assertEquals(EngineException.Kind.LIMIT, e.kind());
        assertTrue(e.getMessage().contains("quota of tenant 'bob' exceeded (workspaces: 1 open, limit 1)"), e.getMessage());
    }

    @Test
    void reopenByName_conflictingOptions_refusedAndNothingChanges() throws Exception {
        engine.open(A, OpenRequest.persistent("p"));
        var e = assertThrows(EngineException.class, () -> engine.open(A, new OpenRequest("p", "ephemeral", null, null, null)));
        assertTrue(e.getMessage().contains("exists and is persistent"), e.getMessage());
        var f = assertThrows(EngineException.class, () -> engine.open(A, new OpenRequest("p", null, "snap-x", null, null)));
        assertEquals(EngineException.Kind.NOT_FOUND, f.kind()); // the snapshot is looked up first
        assertEquals(1, engine.list(A).size());
    }

    @Test
    void parkedWorkspace_reopenResumesIt() throws Exception {
        engine.open(A, OpenRequest.persistent("p"));
        engine.park(A, "p");
        assertEquals(WorkspaceState.PARKED, engine.info(A, "p").state());
        OpenResult r = engine.open(A, OpenRequest.persistent("p"));
        assertFalse(r.created());
        assertTrue(r.resumed());
        assertEquals(WorkspaceState.RUNNING, r.workspace().state());
    }

    @Test
    void restart_persistentComesBackParkedWithOwnerAndEphemeralIsGone() throws Exception {
        String p = engine.open(A, OpenRequest.persistent("keep")).workspace().id();
        sh(A, p, "echo kept > f");
        String e = engine.open(A, OpenRequest.ephemeral()).workspace().id();
        engine.close();
        engine = Engine.start(config());
        assertEquals(List.of(p), engine.list(A).stream().map(WorkspaceInfo::id).toList());
        assertEquals(WorkspaceState.PARKED, engine.info(A, p).state());
        assertTrue(engine.list(B).isEmpty(), "the owner must survive a restart");
        assertEquals("kept\n", sh(A, "keep", "cat f"));
        assertFalse(Files.exists(home.resolve("workspaces").resolve(e)));
    }

    @Test
    void corruptRecord_skippedWithoutTakingOthersDown() throws Exception {
        String p = engine.open(A, OpenRequest.persistent("good")).workspace().id();
        String q = engine.open(A, OpenRequest.persistent("bad")).workspace().id();
        engine.close();
        Path meta = home.resolve("workspaces").resolve(q).resolve("workspace.meta");
        byte[] b = Files.readAllBytes(meta);
        b[b.length - 2] ^= 0x20;
        Files.write(meta, b);
        engine = Engine.start(config());
        assertEquals(List.of(p), engine.list(A).stream().map(WorkspaceInfo::id).toList());
        assertTrue(Files.exists(meta), "an unreadable record is left for the operator, not deleted");
    }

    @Test
    void sandboxKilled_midRun_clearErrorAndNextRunRestartsIt() throws Exception {
        String id = engine.open(A, OpenRequest.persistent("fragile")).workspace().id();
        sh(A, id, "echo kept > f");
        long pid = engine.sandboxOf(A, id).hostPid();
        Thread killer = Thread.ofVirtual().start(() -> {
            try {
                // mid-run: once the run's sleep is a process under the sandbox
                Await.until("the run's sleep has started", () -> ProcessHandle.of(pid).stream().flatMap(ProcessHandle::descendants)
                        .anyMatch(d -> d.info().commandLine().orElse("").contains("sleep 30")));
            } catch (Exception ignored) { }
            ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
        });
        var e = assertThrows(EngineException.class, () -> sh(A, id, "sleep 30"));
        killer.join();
        assertEquals(EngineException.Kind.UNAVAILABLE, e.kind());
        assertTrue(e.getMessage().contains("lost contact with the workspace's agent"), e.getMessage());
        RunResult r = engine.run(A, RunRequest.of(id, "cat f"), OutputListener.NONE);
        assertEquals("kept\n", r.stdout());
        assertTrue(r.resumed(), "the next run should restart the sandbox and say so");
    }

    @Test
    void idleWorkspaces_persistentParkedAndEphemeralClosed() throws Exception {
        engine.close();
        EngineConfig d = config();
        TestClock clock = new TestClock();
        engine = Engine.start(d.withLifecycle(new LifecyclePolicy(1, 1, 0), java.util.Map.of(), d.maxWorkspaces()).withClock(clock));
        String p = engine.open(A, OpenRequest.persistent("sleepy")).workspace().id();
        String e = engine.open(A, OpenRequest.ephemeral()).workspace().id();
        engine.reapIdle();
        assertEquals(2, engine.list(A).size(), "nothing is idle before the clock moves");
        clock.advance(java.time.Duration.ofSeconds(2));
        // a round of the reaper's own thread may hold a workspace's lock at the moment: then the next round gets it
        Await.until("the idle workspaces are parked and closed", () -> {
            engine.reapIdle();
            return engine.list(A).size() == 1 && engine.info(A, p).state() == WorkspaceState.PARKED
                    && !Files.exists(home.resolve("workspaces").resolve(e));
        });
        assertEquals(WorkspaceState.PARKED, engine.info(A, p).state());
        assertEquals(List.of(p), engine.list(A).stream().map(WorkspaceInfo::id).toList(), "the idle ephemeral one is closed");
        assertFalse(Files.exists(home.resolve("workspaces").resolve(e)));
    }

    @Test
    void run_whileParkRequested_parkRefusedWithRunCount() throws Exception {
        String id = engine.open(A, OpenRequest.ephemeral()).workspace().id();
        Thread t = Thread.ofVirtual().start(() -> {
            try {
                sh(A, id, "sleep 2");
            } catch (EngineException ignored) { }
        });
        Await.until("the run is counted", () -> engine.info(A, id).activeRuns() > 0);
        var e = assertThrows(EngineException.class, () -> engine.park(A, id));
        assertTrue(e.getMessage().contains("1 run(s) in progress"), e.getMessage());
        t.join();
        engine.park(A, id);
    }

    @Test
    void secondEngineOnALiveHome_refusedNamingTheOwner() {
        var e = assertThrows(HomeOwnedException.class, () -> Engine.start(config()));
        assertEquals(EngineException.Kind.CONFLICT, e.kind());
        assertTrue(e.getMessage().contains("is owned by Berth process " + ProcessHandle.current().pid()), e.getMessage());
        assertEquals(ProcessHandle.current().pid(), e.ownerPid());
    }

    @Test
    void homeLock_releasedOnClose_nextEngineTakesOver() throws Exception {
        engine.open(A, OpenRequest.persistent("kept"));
        engine.close();
        engine = Engine.start(config());
        assertEquals(1, engine.list(A).size());
    }

    @Test
    void nameShapedLikeAnId_refused() throws Exception {
        String id = engine.open(A, OpenRequest.ephemeral()).workspace().id();
        for (String name : List.of(id, "ws-0123456789", "snap-abc", "WS-ABC")) {
            var e = assertThrows(EngineException.class, () -> engine.open(A, OpenRequest.persistent(name)));
            assertEquals(EngineException.Kind.INVALID_ARGUMENT, e.kind());
            assertTrue(e.getMessage().contains("has the shape of a Berth id"), e.getMessage());
            var s = assertThrows(EngineException.class, () -> engine.snapshot(A, id, name));
            assertTrue(s.getMessage().contains("has the shape of a Berth id"), s.getMessage());
        }
        assertEquals(1, engine.list(A).size(), "nothing was created");
    }

    @Test
    void snapshotQuota_countAndStorage_refusedWithNumbers_andListShowsDependents() throws Exception {
        Tenant c = new Tenant("carol", new Tenant.Quota(8, 64, 1 << 20, 1L << 40, 1, Long.MAX_VALUE));
        String id = engine.open(c, OpenRequest.persistent("snappy")).workspace().id();
        SnapshotInfo first = engine.snapshot(c, id, "first");
        var e = assertThrows(EngineException.class, () -> engine.snapshot(c, id, "second"));
        assertEquals(EngineException.Kind.LIMIT, e.kind());
        assertTrue(e.getMessage().contains("snapshots: 1 kept, limit 1"), e.getMessage());
        String fork = engine.open(c, new OpenRequest(null, null, "first", null, null)).workspace().id();
        SnapshotInfo listed = engine.snapshots(c).get(0);
        assertEquals(first.id(), listed.id());
        assertTrue(listed.stateBytes() >= 0);
        // a namespace fork owns its layer (a subvolume snapshot, or a copy of the image): it does not hold its snapshot
        assertEquals(List.of(), listed.dependents());
        engine.closeWorkspace(c, fork, false);
        assertEquals(List.of(), engine.snapshots(c).get(0).dependents());

        Tenant d = new Tenant("dave", new Tenant.Quota(8, 64, 1 << 20, 1L << 40, 10, 0));
        String w = engine.open(d, OpenRequest.persistent("tiny")).workspace().id();
        sh(d, w, "head -c 300000 /dev/urandom > blob");
        var s = assertThrows(EngineException.class, () -> engine.snapshot(d, w, "big"));
        assertTrue(s.getMessage().contains("snapshot storage"), s.getMessage());
        assertTrue(engine.snapshots(d).isEmpty(), "nothing was kept");
    }
}
