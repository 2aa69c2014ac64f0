package dev.berth.engine.microvm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.berth.engine.Engine;
import dev.berth.engine.api.EngineConfig;
import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.OpenRequest;
import dev.berth.engine.api.OpenResult;
import dev.berth.engine.api.OutputListener;
import dev.berth.engine.api.RunRequest;
import dev.berth.engine.api.RunResult;
import dev.berth.engine.api.Tenant;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Through the engine, on microVMs (test image, TCG): a snapshot can be deleted while forks of it run, and while
 * forks of it are being created; what the forks use stays, the rest is freed.
 */
class MicrovmSnapshotDeleteTest {
    static final Tenant A = new Tenant("alice", Tenant.Quota.UNLIMITED);
    Path home;
    Engine engine;

    @BeforeEach
    void start() throws Exception {
        home = Files.createTempDirectory("berth-vmdelete-");
        engine = Engine.start(EngineConfig.defaults(home, List.of(new MicrovmDriver(TestImages.builder(), MicrovmDriver.ImageKind.TEST)))
                .withTemplates(new dev.berth.engine.api.TemplateSettings(4)));
    }

    @AfterEach
    void stop() throws Exception {
        engine.close();
        dev.berth.engine.spi.Trees.delete(home);
    }

    String sh(String ws, String cmd) throws EngineException {
        RunResult r = engine.run(A, RunRequest.of(ws, cmd), OutputListener.NONE);
        assertEquals(0, r.exitCode(), cmd + ": " + r.stderr());
        return r.stdout();
    }

    static OpenRequest fork(String snapshot) { return new OpenRequest(null, "ephemeral", snapshot, null, null); }

    @Test
    void deleteSnapshot_withLiveForks_andDuringForkMany_forksKeepWorking() throws Exception {
        engine.open(A, OpenRequest.persistent("proj"));
        sh("proj", "echo prepared > /workspace/state.txt; sync");
        engine.snapshot(A, "proj", "tpl");
        List<OpenResult> forks = engine.openMany(A, fork("tpl"), 2);
        engine.deleteSnapshot(A, "tpl"); // forks of it are open: allowed
        assertTrue(engine.snapshots(A).isEmpty());
        for (OpenResult f : forks) {
            assertEquals("prepared\n", sh(f.workspace().id(), "cat /workspace/state.txt"));
            sh(f.workspace().id(), "echo more > /workspace/more.txt; sync");
        }

        // deleted while a fork-many of it runs: the forks are whole, or the call fails and leaves none
        engine.snapshot(A, "proj", "tpl2");
        CompletableFuture<Object> forking = CompletableFuture.supplyAsync(() -> {
            try {
                return engine.openMany(A, fork("tpl2"), 2);
            } catch (EngineException e) {
                return e;
            }
        });
        engine.deleteSnapshot(A, "tpl2");
        Object outcome = forking.get();
        if (outcome instanceof EngineException failed) {
            assertEquals(3, engine.list(A).size(), "no half-made fork was kept: " + failed.getMessage());
        } else {
            @SuppressWarnings("unchecked") List<OpenResult> more = (List<OpenResult>) outcome;
            for (OpenResult f : more) assertEquals("prepared\n", sh(f.workspace().id(), "cat /workspace/state.txt"));
        }
        // no snapshot directory is left, hidden or not
        try (var s = Files.list(home.resolve("snapshots"))) {
            assertEquals(List.of(), s.toList());
        }
    }
}
