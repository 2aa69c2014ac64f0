package dev.berth.engine.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.berth.engine.spi.Trees;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The names every workspace gets: what an image's or a workload's hosts file becomes (a table of named cases, the
 * same rules as the microVM init's {@code names}), and the host's handling of the workspace's own file, hostile
 * content included. No sandbox: plain directories as a non-root layout (uid -1) sees them.
 */
class GuestNamesTest {
    private static final String V4 = "127.0.0.1\tlocalhost\n";
    private static final String V6 = "::1\tlocalhost ip6-localhost ip6-loopback\n";
    private static final String NAME = "127.0.1.1\tworkspace\n";

    private Path dir;

    @BeforeEach
    void setUp() throws IOException {
        dir = Files.createTempDirectory("guest-names-");
    }

    @AfterEach
    void tearDown() throws IOException {
        Trees.delete(dir);
    }

    static Stream<Arguments> hostsCases() {
        return Stream.of(
                Arguments.of("no file", null, GuestNames.DEFAULT_HOSTS),
                Arguments.of("empty file (a mount point made at import)", "", GuestNames.DEFAULT_HOSTS),
                Arguments.of("blank lines only", "\n\n", GuestNames.DEFAULT_HOSTS),
                Arguments.of("complete already", GuestNames.DEFAULT_HOSTS, GuestNames.DEFAULT_HOSTS),
                Arguments.of("the image's own entry kept, ours appended", "10.1.2.3\timage-db\n", "10.1.2.3\timage-db\n" + V4 + V6 + NAME),
                Arguments.of("no final newline", "10.1.2.3 db", "10.1.2.3 db\n" + V4 + V6 + NAME),
                Arguments.of("localhost as an alias counts", "127.0.0.1 localhost.localdomain localhost\n::1 localhost\n",
                        "127.0.0.1 localhost.localdomain localhost\n::1 localhost\n" + NAME),
                Arguments.of("a longer name is not localhost", "127.0.0.1 localhost.localdomain\n",
                        "127.0.0.1 localhost.localdomain\n" + V4 + V6 + NAME),
                Arguments.of("localhost on another address does not count", "10.66.0.1 localhost planted\n",
                        "10.66.0.1 localhost planted\n" + V4 + V6 + NAME),
                Arguments.of("a commented-out entry does not count", "# 127.0.0.1 localhost\n::1 localhost\n",
                        "# 127.0.0.1 localhost\n::1 localhost\n" + V4 + NAME),
                Arguments.of("the hostname on any address counts", "127.0.0.1 localhost workspace\n::1 localhost\n",
                        "127.0.0.1 localhost workspace\n::1 localhost\n"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("hostsCases")
    void hosts_keepsWhatIsThere_andAppendsWhatIsMissing(String name, String existing, String expected) {
        assertEquals(expected, GuestNames.hosts(existing));
    }

    private Layout layout() throws IOException {
        Path state = Files.createDirectories(dir.resolve("state"));
        return new Layout(state, Files.createDirectories(dir.resolve("run")), "ws-test", -1, 1, 64, null);
    }

    @Test
    void ensureHosts_makesTheFileFromTheImages_thenAppendsOnlyWhatAWorkloadRemoved() throws IOException {
        Path image = Files.writeString(dir.resolve("image-hosts"), "10.1.2.3 image-db\n");
        Layout l = layout();
        Path f = GuestNames.ensureHosts(l, image);
        assertEquals(l.layer().resolve(GuestNames.LAYER_HOSTS), f);
        assertEquals("10.1.2.3 image-db\n" + V4 + V6 + NAME, Files.readString(f));
        Files.writeString(f, "10.9.9.9 mine\n127.0.0.1 localhost workspace\n");
        Object inode = Files.getAttribute(f, "unix:ino");
        GuestNames.ensureHosts(l, image);
        assertEquals("10.9.9.9 mine\n127.0.0.1 localhost workspace\n" + V6, Files.readString(f));
        assertEquals(inode, Files.getAttribute(f, "unix:ino"), "appended in place: the file may be bound in a running sandbox");
    }

    @Test
    void ensureHosts_aLinkInPlaceOfTheFile_isReplaced_neverFollowed() throws IOException {
        Path secret = Files.writeString(dir.resolve("secret"), "host secret\n");
        Layout l = layout();
        Files.createDirectories(l.layer().resolve("etc"));
        Files.createSymbolicLink(l.layer().resolve(GuestNames.LAYER_HOSTS), secret);
        Path f = GuestNames.ensureHosts(l, null);
        assertFalse(Files.isSymbolicLink(f));
        assertEquals(GuestNames.DEFAULT_HOSTS, Files.readString(f));
        assertEquals("host secret\n", Files.readString(secret));
    }

    @Test
    void ensureHosts_aLinkInPlaceOfTheDirectory_isReplaced() throws IOException {
        Path elsewhere = Files.createDirectories(dir.resolve("elsewhere"));
        Layout l = layout();
        Files.createSymbolicLink(l.layer().resolve("etc"), elsewhere);
        GuestNames.ensureHosts(l, null);
        assertTrue(Files.isDirectory(l.layer().resolve("etc"), LinkOption.NOFOLLOW_LINKS));
        try (var s = Files.list(elsewhere)) {
            assertEquals(List.of(), s.toList());
        }
    }

    @Test
    void ensureHosts_aHugeFile_isLeftAsItIs() throws IOException {
        Layout l = layout();
        Files.createDirectories(l.layer().resolve("etc"));
        Path f = l.layer().resolve(GuestNames.LAYER_HOSTS);
        Files.write(f, new byte[GuestNames.MAX_HOSTS_BYTES + 1]);
        GuestNames.ensureHosts(l, null);
        assertEquals(GuestNames.MAX_HOSTS_BYTES + 1, Files.size(f));
    }

    @Test
    void addMountPoints_makesEmptyFilesWhereTheImageHasNone_andLeavesLinksAndFiles() throws IOException {
        Path root = dir.resolve("rootfs");
        Files.createDirectories(root.resolve("etc"));
        Files.writeString(root.resolve("etc/hosts"), "10.1.2.3 db\n");
        Files.createSymbolicLink(root.resolve("etc/resolv.conf"), Path.of("../run/systemd/resolve/stub-resolv.conf"));
        assertEquals(List.of("/etc/resolv.conf"), GuestNames.addMountPoints(root));
        assertEquals("10.1.2.3 db\n", Files.readString(root.resolve("etc/hosts")));
        assertEquals(0, Files.size(root.resolve("etc/hostname")));
        assertEquals(0, Files.size(root.resolve("etc/nsswitch.conf")));
        assertTrue(Files.isSymbolicLink(root.resolve("etc/resolv.conf")));
        assertFalse(GuestNames.imageHasNsswitch(root));
        // the covers: the hostname, our nsswitch.conf (the image's is an empty mount point) and the hosts file, not
        // the linked resolv.conf
        List<String> targets = GuestNames.covers(root, dir.resolve("base-etc"), dir.resolve("hosts")).stream()
                .map(GuestNames.Cover::target).toList();
        assertEquals(List.of("/etc/hostname", "/etc/nsswitch.conf", "/etc/hosts"), targets);
        assertEquals(List.of("/etc/resolv.conf"), GuestNames.addMountPoints(root), "idempotent");
    }

    @Test
    void addMountPoints_anEtcThatIsALink_getsNone() throws IOException {
        Path root = Files.createDirectories(dir.resolve("rootfs"));
        Files.createDirectories(dir.resolve("real-etc"));
        Files.createSymbolicLink(root.resolve("etc"), dir.resolve("real-etc"));
        assertEquals(4, GuestNames.addMountPoints(root).size());
        try (var s = Files.list(dir.resolve("real-etc"))) {
            assertEquals(List.of(), s.toList());
        }
    }
}
