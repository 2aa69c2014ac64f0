package dev.berth.engine.microvm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.berth.engine.Engine;
import dev.berth.engine.api.EngineConfig;
import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.OpenRequest;
import dev.berth.engine.api.OutputListener;
import dev.berth.engine.api.RunRequest;
import dev.berth.engine.api.Tenant;
import dev.berth.engine.api.WorkspaceInfo;
import dev.berth.engine.api.WorkspaceState;
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
    /** The driver of the engine last started (its background work is per driver). */
    MicrovmDriver driver;

    EngineConfig config() {
        driver = new MicrovmDriver(TestImages.builder(), MicrovmDriver.ImageKind.TEST);
        return EngineConfig.defaults(home, List.of(driver));
    }

    @AfterEach
    void stop() throws Exception {
        if (engine != null) engine.close();
        if (home != null) dev.berth.engine.spi.Trees.delete(home);
    }

    @Test
    void corruptedDiskWhileParked_workspaceDamaged_refusedAndDeletable() throws Exception {
        String id = parkedAfter("echo work > notes.txt");
        Path state = home.resolve("workspaces").resolve(id).resolve("state");
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

    /**
     * A damaged workspace's files stay readable: read_file and list_files boot its disk in a throwaway, read-only
     * sandbox (what was synced to disk is there; memory is not), writes and runs stay refused, and nothing of what
     * failed verification is changed, so the operator still finds it as it was.
     */
    @Test
    void corruptedMemoryWhileParked_filesStillReadable_nothingChanged() throws Exception {
        String id = parkedAfter("mkdir -p src && echo 'kept on disk' > src/notes.txt && sync");
        Path state = home.resolve("workspaces").resolve(id).resolve("state");
        Path ram = state.resolve("ram");
        Extents.Extent first = Extents.data(ram).getFirst(); // a page park summed
        long at = first.offset() + Math.min(4096, first.length() - 8);
        try (FileChannel ch = FileChannel.open(ram, StandardOpenOption.WRITE)) {
            ch.write(ByteBuffer.wrap("flipped".getBytes()), at);
        }
        var e = assertThrows(EngineException.class, () -> engine.run(Tenant.LOCAL, RunRequest.of(id, "true"), OutputListener.NONE));
        assertTrue(e.getMessage().contains("failed verification"), e.getMessage());
        assertEquals(WorkspaceState.DAMAGED, engine.info(Tenant.LOCAL, id).state());
        java.util.Map<String, String> before = digests(state);

        assertEquals("kept on disk\n", new String(engine.readFile(Tenant.LOCAL, id, "src/notes.txt", 0, 1 << 16).data()));
        assertTrue(engine.listFiles(Tenant.LOCAL, id, "src").entries().stream().anyMatch(f -> f.name().equals("notes.txt")));
        var w = assertThrows(EngineException.class, () -> engine.writeFile(Tenant.LOCAL, id, "src/new.txt", "x".getBytes(), false, null));
        assertTrue(w.getMessage().contains("it is damaged"), w.getMessage());
        assertTrue(w.getMessage().contains("read_file and list_files still show"), w.getMessage());

        assertEquals(WorkspaceState.DAMAGED, engine.info(Tenant.LOCAL, id).state());
        assertEquals(before, digests(state), "reading a damaged workspace changes none of its saved files");
        engine.closeWorkspace(Tenant.LOCAL, id, true);
    }

    /** A persistent workspace "proj" in a new home that ran {@code command} and is parked (its RAM file settled). */
    private String parkedAfter(String command) throws Exception {
        home = Files.createTempDirectory("berth-verify-");
        engine = Engine.start(config());
        String id = engine.open(Tenant.LOCAL, OpenRequest.persistent("proj")).workspace().id();
        engine.run(Tenant.LOCAL, RunRequest.of(id, command), OutputListener.NONE);
        engine.park(Tenant.LOCAL, id);
        driver.awaitHoles(home.resolve("workspaces").resolve(id).resolve("state").resolve("ram"));
        return id;
    }

    private static java.util.Map<String, String> digests(Path dir) throws Exception {
        java.util.Map<String, String> m = new java.util.TreeMap<>();
        try (var files = Files.list(dir)) {
            for (Path f : files.filter(Files::isRegularFile).toList()) {
                var md = java.security.MessageDigest.getInstance("SHA-256");
                try (var in = Files.newInputStream(f)) {
                    byte[] buf = new byte[1 << 20];
                    for (int n; (n = in.read(buf)) > 0; ) md.update(buf, 0, n);
                }
                m.put(f.getFileName().toString(), java.util.HexFormat.of().formatHex(md.digest()));
            }
        }
        return m;
    }
}
