package dev.berth.engine.microvm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.berth.engine.spi.Resources;
import dev.berth.engine.spi.Sandbox;
import dev.berth.engine.spi.StartRequest;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Fresh workspaces after the first are forks of a pristine base snapshot (no boot): they must still be independent
 * machines with their own files and their own randomness.
 */
class MicrovmWarmBaseTest {
    static final Resources SHAPE = new Resources(1, 200, 128, 256); // a shape no other test uses: its own base
    Path root;
    MicrovmDriver driver;
    Sandbox a;
    Sandbox b;

    @BeforeEach
    void setUp() throws Exception {
        root = Files.createTempDirectory("berth-warm-");
        driver = new MicrovmDriver(TestImages.builder(), MicrovmDriver.ImageKind.TEST);
    }

    @AfterEach
    void tearDown() throws Exception {
        if (a != null) a.destroy();
        if (b != null) b.destroy();
        dev.berth.engine.spi.Trees.delete(root);
    }

    StartRequest fresh(String id) {
        return new StartRequest(id, root.resolve(id).resolve("state"), root.resolve(id).resolve("run"), new StartRequest.Fresh(), SHAPE, 0);
    }

    @Test
    void secondFreshWorkspace_isForkedFromTheBase_andIndependent() throws Exception {
        a = driver.start(fresh("ws-warm-a"));
        Path bases = TestImages.builder().cacheDir().resolve("bases");
        try (var s = Files.list(bases)) {
            assertTrue(s.anyMatch(p -> p.getFileName().toString().contains("-m200-c1-d128-") && Files.exists(p.resolve(MicrovmDriver.BASE_COMPLETE))),
                    "the first fresh start leaves a complete base snapshot");
        }
        b = driver.start(fresh("ws-warm-b"));
        String spec = Files.readString(root.resolve("ws-warm-b/state/vm.json"));
        assertTrue(spec.contains("\"memPath\":\"ram\"") && spec.contains("\"memShared\":true"),
                "the second workspace owns a copy of the base's RAM (so it parks like a booted machine): " + spec);
        String disk = ImageBuilder.run(java.util.List.of("qemu-img", "info", "-U", "--output=json",
                root.resolve("ws-warm-b/state/data.qcow2").toString()), 30);
        assertTrue(disk.contains("/bases/"), "its disk is an overlay on the base's: " + disk);

        assertEquals(0, Guest.sh(a.agent(), "echo only-a > /workspace/mine").exit().exitCode());
        assertEquals("", Guest.sh(b.agent(), "cat /workspace/mine 2>/dev/null; true").out());
        String ra = Guest.sh(a.agent(), "head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n'").out();
        String rb = Guest.sh(b.agent(), "head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n'").out();
        assertEquals(64, ra.length(), ra);
        assertNotEquals(ra, rb, "two workspaces from one base must not share randomness");
    }
}
