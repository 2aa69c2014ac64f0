package dev.berth.engine.image;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.berth.engine.host.HostIdentity;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** Import of OCI layouts written byte by byte: layer semantics, image defaults, and a table of refused inputs. */
class ImageImportTest {
    @TempDir Path tmp;
    private final List<String> progress = new ArrayList<>();

    private ImageStore store() { return new ImageStore(tmp.resolve("home")); }

    private static TestLayouts.Layer base() throws IOException {
        return new TestLayouts.Layer().dir("etc", 0755).file("etc/os-release", "ID=tiny\n").dir("bin", 0755)
                .file("bin/tool", "#!/bin/sh\necho tool\n", 0755, 0, 0)
                .dir("srv", 0755).dir("srv/app", 0750).file("srv/app/data", "one", 0640, 1000, 1000)
                .dir("opt", 0755).dir("opt/old", 0755).file("opt/old/a", "a").file("opt/old/b", "b")
                .file("gone", "lower");
    }

    @Test
    void layers_applyInOrder_withWhiteoutsOpaqueDirsOwnersAndModes() throws Exception {
        TestLayouts.Layer upper = new TestLayouts.Layer()
                .file(".wh.gone", "")                                  // whiteout: the lower file goes
                .dir("opt/old", 0755).file("opt/old/.wh..wh..opq", "")  // opaque: lower contents go...
                .file("opt/old/c", "c")                                 // ...this layer's stay
                .file("srv/app/data", "two", 0600, 1000, 1000)          // replaced
                .hardlink("srv/app/link", "srv/app/data")
                .symlink("usr-bin", "/bin")
                .file("bin/su", "setuid", 04755, 0, 0)
                .device("dev-null", 1, 3).fifo("pipe");
        Path layout = TestLayouts.write(tmp.resolve("layout"), new TestLayouts.Spec(), base(), upper);
        ImageRecord r = store().importFrom(layout + ":v1", "tiny", ImportLimits.DEFAULT, progress::add);

        Path root = store().contentDir(r.digest()).resolve("rootfs");
        assertFalse(Files.exists(root.resolve("gone")), "whiteout");
        assertFalse(Files.exists(root.resolve("opt/old/a")) || Files.exists(root.resolve("opt/old/b")), "opaque dir");
        assertEquals("c", Files.readString(root.resolve("opt/old/c")));
        assertEquals("two", Files.readString(root.resolve("srv/app/data")));
        assertEquals(Files.getAttribute(root.resolve("srv/app/data"), "unix:ino"), Files.getAttribute(root.resolve("srv/app/link"), "unix:ino"));
        assertEquals("/bin", Files.readSymbolicLink(root.resolve("usr-bin")).toString());
        assertEquals(0600, (int) Files.getAttribute(root.resolve("srv/app/data"), "unix:mode") & 07777);
        assertEquals(0750, (int) Files.getAttribute(root.resolve("srv/app"), "unix:mode") & 07777);
        if (HostIdentity.isRoot()) assertEquals(1000, Files.getAttribute(root.resolve("srv/app/data"), "unix:uid"));
        assertEquals(0755, (int) Files.getAttribute(root.resolve("bin/su"), "unix:mode") & 07777, "setuid cleared");
        assertFalse(Files.exists(root.resolve("dev-null"), LinkOption.NOFOLLOW_LINKS));
        assertFalse(Files.exists(root.resolve("pipe"), LinkOption.NOFOLLOW_LINKS));
        assertEquals(2, r.report().droppedCount());
        assertEquals(1, r.report().changedCount());
        assertTrue(r.report().changed().get(0).contains("/bin/su: setuid bit cleared"), r.report().toString());
        assertTrue(r.report().dropped().get(0).contains("/dev-null: character device 1,3 dropped"), r.report().toString());
        // the config's defaults
        assertEquals(List.of("PATH=/usr/local/bin:/usr/bin:/bin", "GREETING=hello from the image"), r.env());
        assertEquals("/srv/app", r.workingDir());
        assertEquals("1000", r.user());
        // the ext4 base is a valid filesystem holding the same tree
        Path ext4 = store().contentDir(r.digest()).resolve("base.ext4");
        Process fsck = new ProcessBuilder("e2fsck", "-fn", ext4.toString()).redirectErrorStream(true).start();
        String out = new String(fsck.getInputStream().readAllBytes());
        assertEquals(0, fsck.waitFor(), out);
        Process cat = new ProcessBuilder("debugfs", "-R", "cat /srv/app/data", ext4.toString()).start();
        assertEquals("two", new String(cat.getInputStream().readAllBytes()).strip());
        // named, listed, content-addressed
        assertEquals(List.of("tiny"), store().list().stream().map(ImageInfo::name).toList());
        assertEquals(r.digest(), store().resolve("tiny").digest());
        assertTrue(progress.stream().anyMatch(l -> l.startsWith("applying layer 2/2")), progress.toString());
        // the same content under a second name is not imported twice
        ImageRecord again = store().importFrom(layout + ":v1", "tiny2", ImportLimits.DEFAULT, progress::add);
        assertEquals(r.digest(), again.digest());
        assertEquals(1, Files.list(store().dir().resolve("store")).count());
    }

    /**
     * Owners beyond the 65,536 ids a workspace maps (issue 32): imported as 65534 (nobody/nogroup) by a rule the
     * import's report states, file by file; ids within the range are kept.
     */
    @Test
    void ownersBeyondTheMappedIds_importedAsTheOverflowId_listedInTheReport() throws Exception {
        TestLayouts.Layer upper = new TestLayouts.Layer().dir("var", 0755)
                .file("var/high", "h", 0644, 70000, 100).file("var/group", "g", 0644, 1000, 80000).file("var/kept", "k", 0644, 65535, 65535);
        Path layout = TestLayouts.write(tmp.resolve("layout"), new TestLayouts.Spec(), base(), upper);
        ImageRecord r = store().importFrom(layout + ":v1", "ids", ImportLimits.DEFAULT, progress::add);
        Path root = store().contentDir(r.digest()).resolve("rootfs");
        assertEquals(2, r.report().changedCount(), r.report().toString());
        assertTrue(r.report().changed().contains("/var/high: owner 70000:100 is outside the 65,536 ids a workspace maps;"
                + " imported as 65534:100 (an id above 65,535 becomes 65534, nobody/nogroup)"), r.report().toString());
        assertTrue(r.report().changed().stream().anyMatch(l -> l.startsWith("/var/group: owner 1000:80000 ") && l.contains("imported as 1000:65534")),
                r.report().toString());
        if (HostIdentity.isRoot()) {
            assertEquals(65534, Files.getAttribute(root.resolve("var/high"), "unix:uid"));
            assertEquals(100, Files.getAttribute(root.resolve("var/high"), "unix:gid"));
            assertEquals(65534, Files.getAttribute(root.resolve("var/group"), "unix:gid"));
            assertEquals(65535, Files.getAttribute(root.resolve("var/kept"), "unix:uid"));
        }
    }

    @Test
    void remove_refusedWhileInUse_thenRemovesContentWithTheLastName() throws Exception {
        Path layout = TestLayouts.write(tmp.resolve("layout"), new TestLayouts.Spec(), base());
        ImageRecord r = store().importFrom(layout.toString(), "a", ImportLimits.DEFAULT, progress::add);
        store().importFrom(layout.toString(), "b", ImportLimits.DEFAULT, progress::add);
        ImageException e = assertThrows(ImageException.class, () -> store().remove("a", Map.of(r.digest(), List.of("workspace ws-1"))));
        assertTrue(e.getMessage().contains("in use by workspace ws-1"), e.getMessage());
        assertEquals(0, store().remove("a", Map.of()).digests().size(), "b still points at the content");
        assertEquals(List.of(r.digest()), store().remove("b", Map.of()).digests());
        assertFalse(Files.exists(store().contentDir(r.digest())));
        e = assertThrows(ImageException.class, () -> store().resolve("a"));
        assertTrue(e.getMessage().contains("no image named 'a'"), e.getMessage());
    }

    @Test
    void gc_deletesUnnamedContentUnlessInUse() throws Exception {
        Path layout = TestLayouts.write(tmp.resolve("layout"), new TestLayouts.Spec(), base());
        ImageRecord r = store().importFrom(layout.toString(), "a", ImportLimits.DEFAULT, progress::add);
        // a name repointed elsewhere leaves the old content unnamed; a snapshot still uses it
        Path other = TestLayouts.write(tmp.resolve("other"), new TestLayouts.Spec(), new TestLayouts.Layer().file("x", "y"));
        store().importFrom(other.toString(), "a", ImportLimits.DEFAULT, progress::add);
        assertEquals(List.of(), store().gc(Map.of(r.digest(), List.of("snapshot s1"))).digests());
        assertEquals(List.of(r.digest()), store().gc(Map.of()).digests());
    }

    @Test
    void zstdLayers_areImportedLikeGzipOnes() throws Exception {
        TestLayouts.Spec spec = new TestLayouts.Spec();
        spec.zstd = true;
        Path layout = TestLayouts.write(tmp.resolve("layout"), spec, base(), new TestLayouts.Layer().file(".wh.gone", ""));
        ImageRecord r = store().importFrom(layout.toString(), "z", ImportLimits.DEFAULT, progress::add);
        Path root = store().contentDir(r.digest()).resolve("rootfs");
        assertEquals("ID=tiny", Files.readString(root.resolve("etc/os-release")).strip());
        assertFalse(Files.exists(root.resolve("gone")));
    }

    @Test
    void gc_removesWhatADeadImportLeft_butNotALiveOnes() throws Exception {
        Path layout = TestLayouts.write(tmp.resolve("layout"), new TestLayouts.Spec(), base());
        store().importFrom(layout.toString(), "a", ImportLimits.DEFAULT, progress::add);
        Process dead = new ProcessBuilder("true").start();
        dead.waitFor();
        Path deadImport = Files.createDirectories(store().dir().resolve(".import-" + dead.pid() + "-123/rootfs"));
        Path liveImport = Files.createDirectories(store().dir().resolve(".import-" + ProcessHandle.current().pid() + "-456"));
        store().gc(Map.of());
        assertFalse(Files.exists(deadImport.getParent()), "a dead process's half import goes");
        assertTrue(Files.exists(liveImport), "a running import stays");
        assertEquals(List.of("a"), store().list().stream().map(ImageInfo::name).toList());
    }

    static Stream<Arguments> refused() throws IOException {
        return Stream.of(
                Arguments.of("dot-dot path", new TestLayouts.Spec(), new TestLayouts.Layer[] {
                        new TestLayouts.Layer().file("etc/../../escape", "x")}, "climbs out of the image with '..'"),
                Arguments.of("absolute path", new TestLayouts.Spec(), new TestLayouts.Layer[] {
                        new TestLayouts.Layer().file("/etc/escape", "x")}, "has an absolute path"),
                Arguments.of("symlink then write through it", new TestLayouts.Spec(), new TestLayouts.Layer[] {
                        new TestLayouts.Layer().symlink("out", "/tmp"), new TestLayouts.Layer().file("out/escape", "x")},
                        "goes through the symbolic link /out"),
                Arguments.of("symlink then write through it, same layer", new TestLayouts.Spec(), new TestLayouts.Layer[] {
                        new TestLayouts.Layer().symlink("up", "..").file("up/escape", "x")}, "goes through the symbolic link /up"),
                Arguments.of("hard link out of the image", new TestLayouts.Spec(), new TestLayouts.Layer[] {
                        new TestLayouts.Layer().hardlink("passwd", "../../etc/passwd")}, "climbs out of the image with '..'"),
                Arguments.of("corrupt layer (digest mismatch)", tamper((i, b) -> flip(b)), new TestLayouts.Layer[] {
                        new TestLayouts.Layer().file("a", "a".repeat(5000))}, "digest mismatch"),
                Arguments.of("truncated layer", tamper((i, b) -> java.util.Arrays.copyOf(b, b.length / 2)), new TestLayouts.Layer[] {
                        new TestLayouts.Layer().file("a", "a".repeat(5000))}, "digest mismatch"),
                Arguments.of("another architecture", arch("arm64"), new TestLayouts.Layer[] {
                        new TestLayouts.Layer().file("a", "a")}, "the image is for linux/arm64, this host runs linux/amd64"));
    }

    private static TestLayouts.Spec tamper(java.util.function.BiFunction<Integer, byte[], byte[]> f) {
        TestLayouts.Spec s = new TestLayouts.Spec();
        s.tamper = f;
        return s;
    }

    private static TestLayouts.Spec arch(String a) {
        TestLayouts.Spec s = new TestLayouts.Spec();
        s.architecture = a;
        return s;
    }

    private static byte[] flip(byte[] b) {
        byte[] c = b.clone();
        c[c.length / 2] ^= 0x55;
        return c;
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("refused")
    void badInput_isRefusedWithItsReason_andNothingIsKept(String name, TestLayouts.Spec spec, TestLayouts.Layer[] layers,
                                                          String reason) throws Exception {
        Path layout = TestLayouts.write(tmp.resolve("layout"), spec, layers);
        ImageException e = assertThrows(ImageException.class,
                () -> store().importFrom(layout.toString(), "bad", ImportLimits.DEFAULT, progress::add));
        assertTrue(e.getMessage().contains(reason), name + ": " + e.getMessage());
        assertNothingKept();
        assertFalse(Files.exists(tmp.resolve("escape")) || Files.exists(Path.of("/tmp/escape")), "nothing written outside");
    }

    @Test
    void imageAboveTheSizeLimit_isRefused() throws Exception {
        Path layout = TestLayouts.write(tmp.resolve("layout"), new TestLayouts.Spec(),
                new TestLayouts.Layer().file("big", "x".repeat(3 << 20)));
        ImageException e = assertThrows(ImageException.class,
                () -> store().importFrom(layout.toString(), "big", new ImportLimits(1L << 30, 2L << 20), progress::add));
        assertTrue(e.getMessage().contains("larger than the limit of 2 MiB unpacked"), e.getMessage());
        e = assertThrows(ImageException.class,
                () -> store().importFrom(layout.toString(), "big", new ImportLimits(100, 1L << 30), progress::add));
        assertTrue(e.getMessage().contains("above the limit of 0 MiB"), e.getMessage());
        assertNothingKept();
    }

    @Test
    void badNamesAndMissingTags_areRefused() throws Exception {
        Path layout = TestLayouts.write(tmp.resolve("layout"), new TestLayouts.Spec(), base());
        ImageException e = assertThrows(ImageException.class, () -> store().importFrom(layout.toString(), "../x", ImportLimits.DEFAULT, progress::add));
        assertTrue(e.getMessage().contains("image name '../x' must be"), e.getMessage());
        e = assertThrows(ImageException.class, () -> store().importFrom(layout + ":v9", "x", ImportLimits.DEFAULT, progress::add));
        assertTrue(e.getMessage().contains("no image tagged 'v9' (tags: [v1])"), e.getMessage());
        assertNothingKept();
    }

    private void assertNothingKept() throws IOException {
        ImageStore s = store();
        assertEquals(List.of(), s.list());
        if (Files.isDirectory(s.dir())) {
            try (var l = Files.list(s.dir())) {
                assertEquals(List.of(), l.filter(p -> p.getFileName().toString().startsWith(".import-")).toList());
            }
            if (Files.isDirectory(s.dir().resolve("store"))) {
                try (var l = Files.list(s.dir().resolve("store"))) {
                    assertEquals(List.of(), l.toList());
                }
            }
        }
    }
}
