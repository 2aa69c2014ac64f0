package dev.berth.engine;

import dev.berth.engine.api.EngineConfig;
import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.OpenRequest;
import dev.berth.engine.api.OutputListener;
import dev.berth.engine.api.RunRequest;
import dev.berth.engine.api.RunResult;
import dev.berth.engine.api.Tenant;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.berth.engine.namespace.NamespaceDriver;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A full disk under the Berth home: commands see ENOSPC, tools say the disk is full, snapshot fails without leaving
 * half a snapshot, metadata stays readable, and everything works again once space is freed. The home is a small
 * tmpfs mounted for the test (needs root).
 */
class FullDiskTest {
    Path home;
    Engine engine;
    String ws;

    @BeforeEach
    void start() throws Exception {
        assumeTrue("root".equals(System.getProperty("user.name")), "mounting a tmpfs needs root");
        // the full host disk under a workspace's own ext4 image (the layer pool's full case: NamespaceLayerPoolTest)
        System.setProperty("berth.namespace.layers", "ext4");
        home = Files.createTempDirectory("berth-full-");
        Process p = new ProcessBuilder("mount", "-t", "tmpfs", "-o", "size=100m", "tmpfs", home.toString()).inheritIO().start();
        assertEquals(0, p.waitFor());
        engine = Engine.start(EngineConfig.defaults(home, List.of(new NamespaceDriver(home))));
        // a 64 MiB workspace disk (an image, sparse) on a 100 MiB host filesystem: the workspace fills its disk, and then
        // a snapshot (a second copy) does not fit on the host (random bytes: a copy of zeros would be sparse)
        ws = engine.open(Tenant.LOCAL, new OpenRequest("filler", "persistent", null, null,
                new dev.berth.engine.spi.Resources(1, 256, 64, 256))).workspace().id();
    }

    @AfterEach
    void stop() throws Exception {
        System.clearProperty("berth.namespace.layers");
        if (engine != null) engine.close();
        if (home != null) {
            new ProcessBuilder("umount", "-l", home.toString()).inheritIO().start().waitFor();
            Files.deleteIfExists(home);
        }
    }

    @Test
    void fullDisk_clearErrorsNothingLostAndRecoversAfterCleanup() throws Exception {
        engine.writeFile(Tenant.LOCAL, ws, "keep.txt", "precious\n".getBytes(StandardCharsets.UTF_8), false, null);
        RunResult fill = engine.run(Tenant.LOCAL, RunRequest.of(ws, "dd if=/dev/urandom of=/workspace/fill bs=1M count=200"), OutputListener.NONE);
        assertNotEquals(0, fill.exitCode());
        assertTrue(fill.stderr().contains("No space left on device"), fill.stderr());

        var w = assertThrows(EngineException.class, () -> engine.writeFile(Tenant.LOCAL, ws, "more.bin", new byte[1 << 20], false, null));
        assertEquals(EngineException.Kind.LIMIT, w.kind());
        assertTrue(w.getMessage().contains("disk is full"), w.getMessage());

        var s = assertThrows(EngineException.class, () -> engine.snapshot(Tenant.LOCAL, ws, "too-big"));
        assertTrue(s.getMessage().contains("snapshot of workspace 'filler' failed"), s.getMessage());
        try (var entries = Files.list(home.resolve("snapshots"))) {
            assertEquals(0, entries.count(), "a failed snapshot must leave nothing behind");
        }
        assertTrue(engine.snapshots(Tenant.LOCAL).isEmpty());

        // the workspace still answers, its files are intact, and freeing space makes everything work again
        assertEquals("precious\n", engine.run(Tenant.LOCAL, RunRequest.of(ws, "cat keep.txt; rm fill"), OutputListener.NONE).stdout());
        assertEquals("too-big", engine.snapshot(Tenant.LOCAL, ws, "too-big").name());
        engine.park(Tenant.LOCAL, ws);
        engine.close();
        engine = Engine.start(EngineConfig.defaults(home, List.of(new NamespaceDriver(home))));
        assertEquals("precious\n", engine.run(Tenant.LOCAL, RunRequest.of("filler", "cat keep.txt"), OutputListener.NONE).stdout());
    }
}
