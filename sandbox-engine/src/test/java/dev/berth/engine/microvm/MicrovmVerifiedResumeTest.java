package dev.berth.engine.microvm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.berth.engine.Engine;
import dev.berth.engine.EngineConfig;
import dev.berth.engine.EngineException;
import dev.berth.engine.OpenRequest;
import dev.berth.engine.OutputListener;
import dev.berth.engine.RunRequest;
import dev.berth.engine.Tenant;
import dev.berth.engine.WorkspaceInfo;
import dev.berth.engine.WorkspaceState;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Verified resume through the engine: a parked microVM workspace whose saved state is not what park wrote is marked
 * damaged (persisted, visible in list_workspaces), never half-resumed, refuses runs with advice, and can be deleted.
 */
class MicrovmVerifiedResumeTest {
    Path home;
    Engine engine;

    EngineConfig config() {
        return EngineConfig.defaults(home, List.of(new MicrovmDriver(TestImages.builder(), MicrovmDriver.ImageKind.TEST)));
    }

    @AfterEach
    void stop() throws Exception {
        if (engine != null) engine.close();
        if (home != null) dev.berth.engine.spi.Trees.delete(home);
    }

    @Test
    void corruptedDiskWhileParked_workspaceDamaged_refusedAndDeletable() throws Exception {
        home = Files.createTempDirectory("berth-verify-");
        engine = Engine.start(config());
        String id = engine.open(Tenant.LOCAL, OpenRequest.persistent("proj")).workspace().id();
        engine.run(Tenant.LOCAL, RunRequest.of(id, "echo work > notes.txt"), OutputListener.NONE);
        engine.park(Tenant.LOCAL, id);
        Path state = home.resolve("workspaces").resolve(id).resolve("state");
        MicrovmDriver.awaitHoles(state.resolve("ram"));
        Path disk = state.resolve("data.qcow2");
        try (FileChannel ch = FileChannel.open(disk, StandardOpenOption.WRITE)) {
            ch.write(ByteBuffer.wrap("tampered".getBytes()), Files.size(disk) / 3); // a disk image put back by hand
        }

        var e = assertThrows(EngineException.class, () -> engine.run(Tenant.LOCAL, RunRequest.of(id, "cat notes.txt"), OutputListener.NONE));
        assertEquals(EngineException.Kind.ILLEGAL_STATE, e.kind());
        assertTrue(e.getMessage().contains("failed verification: data.qcow2 has changed since park"), e.getMessage());
        assertTrue(e.getMessage().contains("Nothing was resumed"), e.getMessage());
        WorkspaceInfo info = engine.info(Tenant.LOCAL, id);
        assertEquals(WorkspaceState.DAMAGED, info.state());
        assertTrue(info.recovered().startsWith("damaged: its saved state failed verification (data.qcow2"), info.recovered());

        var again = assertThrows(EngineException.class, () -> engine.run(Tenant.LOCAL, RunRequest.of(id, "true"), OutputListener.NONE));
        assertTrue(again.getMessage().contains("it is damaged"), again.getMessage());
        assertTrue(Files.exists(disk), "nothing of a damaged workspace is deleted by a refusal");

        // the mark survives a restart, with its reason
        engine.close();
        engine = Engine.start(config());
        WorkspaceInfo after = engine.info(Tenant.LOCAL, "proj");
        assertEquals(WorkspaceState.DAMAGED, after.state());
        assertEquals(info.recovered(), after.recovered());

        engine.closeWorkspace(Tenant.LOCAL, "proj", true);
        assertFalse(Files.exists(home.resolve("workspaces").resolve(id)));
    }
}
