package dev.berth.engine.microvm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
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
        Path old = new WarmBases(TestImages.builder().cacheDir(), false).of(driver.imageId(), SHAPE, 0);
        if (!Files.exists(old.resolve(WarmBases.SELF_CONTAINED))) dev.berth.engine.spi.Trees.delete(old); // an older build's, in a reused cache
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
        assertFalse(disk.contains("backing-filename"), "its disk is its own copy, nothing refers to the base: " + disk);

        assertEquals(0, Guest.sh(a.agent(), "echo only-a > /workspace/mine").exit().exitCode());
        assertEquals("", Guest.sh(b.agent(), "cat /workspace/mine 2>/dev/null; true").out());
        String ra = Guest.sh(a.agent(), "head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n'").out();
        String rb = Guest.sh(b.agent(), "head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n'").out();
        assertEquals(64, ra.length(), ra);
        assertNotEquals(ra, rb, "two workspaces from one base must not share randomness");

        // nothing refers to the base once its forks have started: remove it, and b still parks and resumes
        Path base = new WarmBases(TestImages.builder().cacheDir(), false).of(driver.imageId(), SHAPE, 0);
        assertTrue(Files.isRegularFile(base.resolve(WarmBases.SELF_CONTAINED)), "a new base is marked self-contained");
        Path moved = base.resolveSibling(".moved-" + base.getFileName());
        Files.move(base, moved);
        try {
            b.park();
            b = driver.start(new StartRequest("ws-warm-b", root.resolve("ws-warm-b/state"), root.resolve("ws-warm-b/run"),
                    new StartRequest.Resume(), SHAPE, 0));
            assertEquals("", Guest.sh(b.agent(), "cat /workspace/mine 2>/dev/null; true").out());
            assertEquals(0, Guest.sh(b.agent(), "echo still-b > /workspace/b && cat /workspace/b").exit().exitCode());
        } finally {
            Files.move(moved, base);
        }
    }

    /**
     * The collector removes superseded, long-unused and abandoned bases, and keeps one in use, unmarked (older) ones
     * and the current image's.
     */
    @Test
    void collect_removesSupersededUnusedAndAbandoned_keepsInUseAndUnmarked() throws Exception {
        Path cache = root.resolve("cache");
        WarmBases bases = new WarmBases(cache, false);
        Files.createDirectories(bases.dir());
        Resources r = SHAPE;
        Path current = base(bases, bases.of("test-1111111111111111", r, 0), true);
        Path superseded = base(bases, bases.of("test-0000000000000000", r, 0), true);
        Path supersededButHeld = base(bases, bases.of("test-0000000000000000", new Resources(1, 300, 128, 256), 0), true);
        Path unmarked = base(bases, bases.of("test-2222222222222222", r, 0), false);
        Path otherKind = base(bases, bases.of("dev-3333333333333333", r, 0), true);
        Path stale = base(bases, bases.of("dev-4444444444444444", r, 0), true);
        Files.setLastModifiedTime(stale.resolve(WarmBases.COMPLETE),
                java.nio.file.attribute.FileTime.from(java.time.Instant.now().minus(WarmBases.UNUSED_FOR.plusDays(1))));
        Path abandoned = Files.createDirectories(bases.dir().resolve(".base-123"));
        Files.setLastModifiedTime(abandoned, java.nio.file.attribute.FileTime.from(java.time.Instant.now().minus(java.time.Duration.ofHours(2))));
        Path inProgress = Files.createDirectories(bases.dir().resolve(".base-456"));

        java.util.List<String> removed;
        try (WarmBases.Lease held = bases.use(supersededButHeld).orElseThrow()) {
            removed = bases.collect("test-1111111111111111", java.time.Instant.now());
        }
        assertEquals(java.util.Set.of(superseded.getFileName().toString(), stale.getFileName().toString(), ".base-123"),
                java.util.Set.copyOf(removed));
        for (Path kept : java.util.List.of(current, supersededButHeld, unmarked, otherKind, inProgress)) {
            assertTrue(Files.isDirectory(kept), kept + " is kept");
        }
        for (Path gone : java.util.List.of(superseded, stale, abandoned)) assertFalse(Files.exists(gone), gone + " is removed");
        try (var s = Files.list(bases.dir())) {
            assertTrue(s.noneMatch(p -> p.getFileName().toString().startsWith(".trash-")), "nothing left in the trash");
        }
        // once released, the next pass takes it; a fork that then asks for it finds it gone
        assertEquals(java.util.List.of(supersededButHeld.getFileName().toString()), bases.collect("test-1111111111111111", java.time.Instant.now()));
        assertTrue(bases.use(supersededButHeld).isEmpty());
        assertTrue(bases.use(current).isPresent());
    }

    private static Path base(WarmBases bases, Path dir, boolean marked) throws Exception {
        Path tmp = Files.createTempDirectory(bases.dir(), ".base-");
        Files.writeString(tmp.resolve("ram"), "x");
        if (marked) {
            bases.publish(tmp, dir);
        } else {
            Files.writeString(tmp.resolve(WarmBases.COMPLETE), "older base\n");
            Files.move(tmp, dir);
        }
        return dir;
    }
}
