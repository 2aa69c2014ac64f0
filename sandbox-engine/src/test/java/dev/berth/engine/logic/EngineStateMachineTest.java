package dev.berth.engine.logic;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.berth.engine.Engine;
import dev.berth.engine.EngineConfig;
import dev.berth.engine.EngineException;
import dev.berth.engine.OpenRequest;
import dev.berth.engine.OutputListener;
import dev.berth.engine.ParkResult;
import dev.berth.engine.RunRequest;
import dev.berth.engine.RunResult;
import dev.berth.engine.SnapshotInfo;
import dev.berth.engine.Tenant;
import dev.berth.engine.WorkspaceState;
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
}
