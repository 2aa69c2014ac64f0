package dev.berth.engine.logic;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.berth.engine.Engine;
import dev.berth.engine.api.EngineConfig;
import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.OpenRequest;
import dev.berth.engine.api.OutputListener;
import dev.berth.engine.api.ParkResult;
import dev.berth.engine.api.RunRequest;
import dev.berth.engine.api.RunResult;
import dev.berth.engine.api.SnapshotInfo;
import dev.berth.engine.api.Tenant;
import dev.berth.engine.api.WorkspaceState;
import dev.berth.engine.spi.Trees;
import dev.berth.engine.testing.HostProcessDriver;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The workspace state machine through the public engine API (open, run, park, resume on run, snapshot, fork, close,
 * and the refusals that name the workspace and its state), on the {@link HostProcessDriver} test double: engine logic
 * only, no isolation is tested here.
 */
class EngineStateMachineTest {
    static final Tenant A = new Tenant("alice", Tenant.Quota.UNLIMITED);
    Path home;
    HostProcessDriver driver;
    Engine engine;

    @BeforeEach
    void start() throws Exception {
        home = Files.createTempDirectory("berth-logic-");
        driver = new HostProcessDriver(home);
        engine = Engine.start(EngineConfig.defaults(home, List.of(driver)));
    }

    @AfterEach
    void stop() throws Exception {
        engine.close();
        Trees.delete(home);
    }

    String sh(String ws, String cmd) throws EngineException {
        RunResult r = engine.run(A, RunRequest.of(ws, cmd), OutputListener.NONE);
        assertEquals(0, r.exitCode(), r.toString());
        return r.stdout();
    }

    @Test
    void open_thenRun_runsInTheWorkspaceDirectory() throws Exception {
        String id = engine.open(A, OpenRequest.persistent("p")).workspace().id();
        assertEquals(WorkspaceState.RUNNING, engine.info(A, id).state());
        assertEquals(HostProcessDriver.NAME, engine.info(A, id).isolation());
        sh(id, "echo hello > f");
        assertEquals("hello\n", new String(engine.readFile(A, id, "/workspace/f", 0, 100).data(), StandardCharsets.UTF_8));
        assertEquals(List.of(id + " Fresh"), driver.starts());
    }

    @Test
    void park_thenRun_resumesWithFilesKeptAndMemoryNot() throws Exception {
        String id = engine.open(A, OpenRequest.persistent("p")).workspace().id();
        sh(id, "echo kept > f");
        ParkResult park = engine.park(A, "p");
        assertFalse(park.memoryKept(), "the double keeps files only, and says so");
        assertFalse(park.alreadyParked());
        assertEquals(WorkspaceState.PARKED, engine.info(A, id).state());

        RunResult r = engine.run(A, RunRequest.of(id, "cat f"), OutputListener.NONE);
        assertEquals("kept\n", r.stdout());
        assertTrue(r.resumed(), "a run on a parked workspace resumes it and says so");
        assertEquals(WorkspaceState.RUNNING, engine.info(A, id).state());
        assertEquals(List.of(id + " Fresh", id + " Resume"), driver.starts());
    }

    @Test
    void park_twice_secondIsAlreadyDone() throws Exception {
        engine.open(A, OpenRequest.persistent("p"));
        engine.park(A, "p");
        ParkResult again = engine.park(A, "p");
        assertTrue(again.alreadyParked(), again.toString());
        assertEquals(WorkspaceState.PARKED, again.workspace().state());
    }

    @Test
    void snapshot_thenFork_forkHasTheFilesOfTheSnapshotOnly() throws Exception {
        String id = engine.open(A, OpenRequest.persistent("origin")).workspace().id();
        sh(id, "echo before > f");
        SnapshotInfo snap = engine.snapshot(A, "origin", "s1");
        assertEquals(id, snap.workspaceId());
        assertFalse(snap.memoryKept());
        assertEquals(WorkspaceState.RUNNING, engine.info(A, id).state(), "a live snapshot leaves the workspace running");
        sh(id, "echo after > f");

        String fork = engine.open(A, new OpenRequest("copy", "persistent", "s1", null, null)).workspace().id();
        assertEquals("before\n", sh(fork, "cat f"));
        assertEquals("after\n", sh(id, "cat f"));
        assertTrue(driver.starts().contains(fork + " Fork"), driver.starts().toString());
    }

    @Test
    void snapshot_ofParkedWorkspace_takenFromSavedStateAndStaysParked() throws Exception {
        String id = engine.open(A, OpenRequest.persistent("p")).workspace().id();
        sh(id, "echo saved > f");
        engine.park(A, id);
        engine.snapshot(A, id, "cold");
        assertEquals(WorkspaceState.PARKED, engine.info(A, id).state());
        String fork = engine.open(A, new OpenRequest(null, "ephemeral", "cold", null, null)).workspace().id();
        assertEquals("saved\n", sh(fork, "cat f"));
    }

    @Test
    void snapshot_withForkLive_deletableBecauseForksCopy() throws Exception {
        engine.open(A, OpenRequest.persistent("p"));
        SnapshotInfo snap = engine.snapshot(A, "p", "s");
        String fork = engine.open(A, new OpenRequest(null, "ephemeral", "s", null, null)).workspace().id();
        engine.deleteSnapshot(A, snap.id());
        assertTrue(engine.snapshots(A).isEmpty());
        assertEquals("ok\n", sh(fork, "echo ok"));
    }

    @Test
    void close_persistentWithDelete_goneAndRefsNotFound() throws Exception {
        String id = engine.open(A, OpenRequest.persistent("p")).workspace().id();
        engine.closeWorkspace(A, "p", true);
        assertTrue(engine.list(A).isEmpty());
        assertFalse(Files.exists(home.resolve("workspaces").resolve(id)));
        for (String ref : List.of(id, "p")) {
            var e = assertThrows(EngineException.class, () -> sh(ref, "true"));
            assertEquals(EngineException.Kind.NOT_FOUND, e.kind());
            assertTrue(e.getMessage().startsWith("no workspace '" + ref + "'"), e.getMessage());
        }
    }

    @Test
    void damagedOnResume_runRefusedNamingWorkspaceAndState_closeStillAllowed() throws Exception {
        String id = engine.open(A, OpenRequest.persistent("fragile")).workspace().id();
        engine.park(A, id);
        driver.damageNextResume(id);

        var resume = assertThrows(EngineException.class, () -> sh(id, "true"));
        assertEquals(EngineException.Kind.ILLEGAL_STATE, resume.kind());
        assertTrue(resume.getMessage().startsWith("cannot resume workspace 'fragile': its saved state failed verification"),
                resume.getMessage());
        assertEquals(WorkspaceState.DAMAGED, engine.info(A, id).state());

        var run = assertThrows(EngineException.class, () -> sh(id, "true"));
        assertEquals(EngineException.Kind.ILLEGAL_STATE, run.kind());
        assertTrue(run.getMessage().startsWith("cannot run in workspace 'fragile': it is damaged"), run.getMessage());
        var snap = assertThrows(EngineException.class, () -> engine.snapshot(A, id, null));
        assertTrue(snap.getMessage().startsWith("cannot snapshot workspace 'fragile': it is damaged"), snap.getMessage());
        assertTrue(engine.park(A, id).alreadyParked(), "parking a damaged workspace has nothing to do");

        engine.closeWorkspace(A, id, true);
        assertTrue(engine.list(A).isEmpty());
    }
}
