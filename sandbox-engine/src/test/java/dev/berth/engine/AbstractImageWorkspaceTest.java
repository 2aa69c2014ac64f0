package dev.berth.engine;

import dev.berth.engine.api.EngineConfig;
import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.ImageRef;
import dev.berth.engine.api.OpenRequest;
import dev.berth.engine.api.OpenResult;
import dev.berth.engine.api.OutputListener;
import dev.berth.engine.api.RunRequest;
import dev.berth.engine.api.RunResult;
import dev.berth.engine.api.SnapshotInfo;
import dev.berth.engine.api.Tenant;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.berth.engine.host.GuestNames;
import dev.berth.engine.image.ImageRecord;
import dev.berth.engine.image.ImportLimits;
import dev.berth.engine.image.OciFixture;
import dev.berth.engine.image.RegistryClient;
import dev.berth.engine.spi.IsolationDriver;
import dev.berth.engine.spi.Resources;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * A workspace on an imported image, the same cases on every driver that opens images (one subclass per driver): an
 * image written by umoci, pushed by skopeo to a real registry on loopback, pulled by Berth, opened, run, parked,
 * resumed, snapshotted and forked; the image's own files and config defaults are what runs see, its stored files
 * never change, and it cannot be removed while used.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
public abstract class AbstractImageWorkspaceTest {
    protected static final Resources SMALL = new Resources(1, 256, 64, 256);
    protected Path home;
    protected Engine engine;
    protected ImageRecord image;
    private OciFixture oci;
    private final List<String> progress = new ArrayList<>();

    protected abstract IsolationDriver driver(Path home) throws Exception;

    @BeforeAll
    void start() throws Exception {
        assumeTrue(OciFixture.missingTools() == null, OciFixture::missingTools);
        home = Files.createTempDirectory("berth-image-ws-");
        Files.setPosixFilePermissions(home, java.nio.file.attribute.PosixFilePermissions.fromString("rwxr-xr-x"));
        IsolationDriver d = driver(home);
        assumeTrue(d.probe().available(), () -> d.name() + " cannot run here: " + d.probe().reason());
        oci = new OciFixture(home.resolve("oci-src"));
        Path layout = oci.busyboxLayout();
        String ref = oci.push(layout, oci.startRegistry(), "berth/tiny");
        engine = Engine.start(EngineConfig.defaults(home, List.of(d)));
        image = engine.images().pull(ref, "tiny", ImportLimits.DEFAULT, RegistryClient.Credentials.NONE, true, progress::add);
    }

    @AfterAll
    void stop() throws IOException {
        if (engine != null) engine.close();
        if (oci != null) oci.close();
        if (home != null) dev.berth.engine.spi.Trees.delete(home);
    }

    protected RunResult run(String ws, String cmd) throws EngineException {
        return engine.run(Tenant.LOCAL, new RunRequest(ws, cmd, null, Map.of(), 60, null, null), OutputListener.NONE);
    }

    private OpenResult open(String name, String image, String fromSnapshot) throws EngineException {
        return engine.open(Tenant.LOCAL, new OpenRequest(name, null, fromSnapshot, null, SMALL, null, null, image));
    }

    private String storedDigest(String file) throws IOException {
        Path root = engine.images().dir().resolve("store").resolve(image.digest().substring(7));
        return dev.berth.engine.image.ImageTestAccess.sha(root.resolve(file));
    }

    @Test
    void openOnImage_runsSeeTheImagesFilesAndConfigDefaults_andTheStoredImageNeverChanges() throws Exception {
        String rootfsBefore = storedDigest("rootfs/etc/os-release");
        String ext4Before = storedDigest("base.ext4");
        OpenResult o = open(null, "tiny", null);
        assertEquals(new ImageRef("tiny", image.digest()), o.workspace().image());
        String ws = o.workspace().id();
        RunResult r = run(ws, "cat /etc/os-release; echo \"$GREETING\"; pwd; cat hello.txt; cat /var/lib/tiny/state;"
                + " test -e /etc/removed-later && echo whiteout-ignored; cat /etc/second-layer");
        assertEquals(0, r.exitCode(), r.stderr());
        assertEquals(List.of("ID=" + OciFixture.MARKER, "hello from the config", "/srv/app", "hello from the image", "seeded",
                "upper layer"), r.stdout().strip().lines().toList());
        // the image is the whole root: nothing of the host's /usr or of the built-in image shows
        RunResult host = run(ws, "test -e /usr/lib/jvm || test -e /usr/bin/python3 || test -e /sbin/berth-reseed-missing && echo host-visible; echo done");
        assertEquals("done", host.stdout().strip(), host.stdout());
        // writable where a workspace writes; whatever it does to the root, the stored image stays as imported
        assertEquals(0, run(ws, "echo mine > /workspace/f && cat /workspace/f && echo more >> /var/lib/tiny/state").exitCode());
        run(ws, "echo changed >> /etc/os-release; rm -f /bin/cat; echo x > /bin/planted");
        assertEquals(rootfsBefore, storedDigest("rootfs/etc/os-release"));
        assertEquals(ext4Before, storedDigest("base.ext4"));
        engine.closeWorkspace(Tenant.LOCAL, ws, true);
        // a second workspace on the image starts from the image, not from the first one's changes
        String ws2 = open(null, "tiny", null).workspace().id();
        RunResult again = run(ws2, "cat /etc/os-release; cat /var/lib/tiny/state; test -e /bin/planted && echo planted; echo end");
        assertEquals(List.of("ID=" + OciFixture.MARKER, "seeded", "end"), again.stdout().strip().lines().toList());
        engine.closeWorkspace(Tenant.LOCAL, ws2, true);
    }

    @Test
    void openOnImage_keepsItsOwnHostsEntries_andGetsTheNamesEveryWorkspaceHas() throws Exception {
        String ws = open(null, "tiny", null).workspace().id();
        try {
            RunResult r = run(ws, "cat /etc/hosts; hostname; cat /etc/hostname; grep '^hosts:' /etc/nsswitch.conf");
            assertEquals(OciFixture.HOSTS + "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n127.0.1.1\t"
                    + GuestNames.HOSTNAME + "\n" + GuestNames.HOSTNAME + "\n" + GuestNames.HOSTNAME + "\nhosts:          files dns\n",
                    r.stdout(), r.toString());
            assertEquals(GuestNames.RESOLV_CONF, run(ws, "cat /etc/resolv.conf").stdout());
            // localhost and the image's own name resolve (nothing listens: refused, not "bad address"); others fail at once
            // (busybox wget: -T crashes the Debian build)
            RunResult w = run(ws, "for h in localhost image-db registry.example.com; do wget -Y off -q -O- http://$h:1/ 2>&1; done");
            List<String> lines = w.stdout().strip().lines().toList();
            assertEquals(3, lines.size(), w.toString());
            assertTrue(lines.get(0).matches("wget: can't connect to remote host \\((127\\.0\\.0\\.1|::1)\\): Connection refused"), w.toString());
            assertTrue(lines.get(1).startsWith("wget: can't connect to remote host (10.1.2.3): "), w.toString());
            assertEquals("wget: bad address 'registry.example.com:1'", lines.get(2), w.toString());
        } finally {
            engine.closeWorkspace(Tenant.LOCAL, ws, true);
        }
    }

    @Test
    void parkResumeSnapshotAndFork_keepTheImage_andRemovalIsRefusedWhileUsed() throws Exception {
        String ws = open("on-image", "tiny", null).workspace().id();
        assertEquals(0, run(ws, "echo kept > /workspace/k").exitCode());
        engine.park(Tenant.LOCAL, ws);
        RunResult r = run(ws, "cat /workspace/k /etc/os-release");
        assertEquals("kept\nID=" + OciFixture.MARKER, r.stdout().strip());
        EngineException conflict = assertThrows(EngineException.class, () -> open("on-image", "other", null));
        assertEquals(EngineException.Kind.CONFLICT, conflict.kind());
        assertTrue(conflict.getMessage().contains("exists on image 'tiny'"), conflict.getMessage());

        SnapshotInfo snap = engine.snapshot(Tenant.LOCAL, ws, "img-snap");
        OpenResult fork = open(null, null, snap.id());
        assertEquals("tiny", fork.workspace().image().name());
        assertEquals("kept\nID=" + OciFixture.MARKER, run(fork.workspace().id(), "cat /workspace/k /etc/os-release").stdout().strip());
        EngineException forkOther = assertThrows(EngineException.class, () -> open(null, ImageRef.BUILT_IN, snap.id()));
        assertTrue(forkOther.getMessage().contains("was taken on image 'tiny'"), forkOther.getMessage());

        EngineException inUse = assertThrows(EngineException.class, () -> engine.removeImage("tiny"));
        assertEquals(EngineException.Kind.CONFLICT, inUse.kind());
        assertTrue(inUse.getMessage().contains("workspace " + ws + " (on-image)"), inUse.getMessage());
        assertTrue(inUse.getMessage().contains("snapshot " + snap.id()), inUse.getMessage());
        engine.closeWorkspace(Tenant.LOCAL, fork.workspace().id(), true);
        engine.closeWorkspace(Tenant.LOCAL, ws, true);
        inUse = assertThrows(EngineException.class, () -> engine.removeImage("tiny"));
        assertTrue(inUse.getMessage().contains("snapshot " + snap.id()) && !inUse.getMessage().contains("workspace " + ws), inUse.getMessage());
        engine.deleteSnapshot(Tenant.LOCAL, snap.id());
        // still named: the other test may run after this one, so it is imported again under a second name first
        engine.images().importFrom(oci.dockerArchive(home.resolve("oci-src/layout")).toString(), "tiny-copy", ImportLimits.DEFAULT, progress::add);
        assertNotEquals(List.of(), engine.removeImage("tiny-copy").names());
    }

    @Test
    void unknownImage_isNotFound_withTheImagesThereAre() {
        EngineException e = assertThrows(EngineException.class, () -> open(null, "no-such-image", null));
        assertEquals(EngineException.Kind.NOT_FOUND, e.kind());
        assertTrue(e.getMessage().contains("no image named 'no-such-image' (images: [tiny"), e.getMessage());
    }

    /** The image config's User on every level: runs are that user, and own the workspace and what the tool writes. */
    @Test
    void imageUser_runsAsThatUser_resolvedThroughTheImagesPasswd_andAnUnknownUserIsRefusedAtImport() throws Exception {
        var fixture = new dev.berth.engine.image.OciFixture(home.resolve("oci-user"));
        Path layout = fixture.busyboxLayout(null, "app");
        var limits = dev.berth.engine.image.ImportLimits.DEFAULT;
        assertEquals("app", engine.images().importFrom(layout + ":v1", "as-app", limits, l -> { }).user());
        try {
            asApp();
        } finally {
            engine.images().remove("as-app", java.util.Map.of());
        }

        var ghost = new dev.berth.engine.image.OciFixture(home.resolve("oci-ghost"));
        Path ghostLayout = ghost.busyboxLayout(null, "ghost");
        var e = org.junit.jupiter.api.Assertions.assertThrows(dev.berth.engine.image.ImageException.class,
                () -> engine.images().importFrom(ghostLayout + ":v1", "ghost", limits, l -> { }));
        assertTrue(e.getMessage().contains("no user 'ghost' in the image's /etc/passwd"), e.getMessage());
        assertTrue(engine.images().digestOf("ghost").isEmpty());
    }

    private void asApp() throws Exception {
        String ws = engine.open(Tenant.LOCAL, new OpenRequest(null, null, null, null, SMALL, null, null, "as-app")).workspace().id();
        engine.writeFile(Tenant.LOCAL, ws, "from-host/f.txt", "written by the tool\n".getBytes(java.nio.charset.StandardCharsets.UTF_8), false, null);
        RunResult r = run(ws, "id -u; id -g; id -un; echo mine > /workspace/by-app && stat -c '%u:%g' /workspace/by-app; echo x > /root/x && echo home-writable;"
                + " stat -c '%u:%g' /workspace/from-host /workspace/from-host/f.txt; echo more >> /workspace/from-host/f.txt && echo tool-file-writable");
        assertEquals(0, r.exitCode(), r.stderr());
        assertEquals(java.util.List.of("1234", "2345", "app", "1234:2345", "home-writable", "1234:2345", "1234:2345", "tool-file-writable"),
                r.stdout().strip().lines().toList(), r.toString());
        engine.closeWorkspace(Tenant.LOCAL, ws, true);
    }
}
