package dev.berth.engine.image;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Images written by real tools (umoci, skopeo) and served by a real registry on loopback, imported three ways. */
class OciToolsImageTest {
    @TempDir Path tmp;
    private final List<String> progress = new ArrayList<>();

    @Test
    void umociLayout_dockerArchive_andRegistryPull_giveTheSameTree() throws Exception {
        assumeTrue(OciFixture.missingTools() == null, OciFixture::missingTools);
        try (OciFixture oci = new OciFixture(tmp.resolve("oci"))) {
            Path layout = oci.busyboxLayout();
            ImageStore store = new ImageStore(tmp.resolve("home"));

            ImageRecord fromLayout = store.importFrom(layout + ":" + OciFixture.TAG, "tiny", ImportLimits.DEFAULT, progress::add);
            Path root = store.contentDir(fromLayout.digest()).resolve("rootfs");
            assertEquals("ID=" + OciFixture.MARKER, Files.readString(root.resolve("etc/os-release")).strip());
            assertFalse(Files.exists(root.resolve("etc/removed-later")), "umoci's whiteout in layer 2 deletes layer 1's file");
            assertTrue(Files.exists(root.resolve("etc/second-layer")));
            assertEquals(2, fromLayout.layers().size());
            assertTrue(fromLayout.env().contains("GREETING=hello from the config"), fromLayout.env().toString());
            assertEquals("/srv/app", fromLayout.workingDir());

            ImageRecord fromArchive = store.importFrom(oci.dockerArchive(layout).toString(), "tiny-archive", ImportLimits.DEFAULT, progress::add);
            assertEquals(fromLayout.configDigest(), fromArchive.configDigest(), "same config, whatever the container");
            assertTrue(fromArchive.origin().startsWith("archive:"), fromArchive.origin());
            // an OCI layout in a tar (skopeo's oci-archive, and what docker 25+ saves): read as a layout, same manifest
            Path ociArchive = tmp.resolve("oci-archive.tar");
            OciFixture.run("skopeo", "copy", "--quiet", "oci:" + layout + ":" + OciFixture.TAG, "oci-archive:" + ociArchive + ":" + OciFixture.TAG);
            ImageRecord fromOciArchive = store.importFrom(ociArchive.toString(), "tiny-oci-archive", ImportLimits.DEFAULT, progress::add);
            assertEquals(fromLayout.digest(), fromOciArchive.digest());

            String registry = oci.startRegistry();
            String ref = oci.push(layout, registry, "berth/tiny");
            // into a home of its own, so that the tree is made from what the registry sent
            ImageStore other = new ImageStore(tmp.resolve("home2"));
            ImageRecord pulled = other.pull(ref, "tiny-pulled", ImportLimits.DEFAULT, RegistryClient.Credentials.NONE, true, progress::add);
            assertEquals(fromLayout.digest(), pulled.digest(), "skopeo pushed the same manifest");
            assertEquals("registry:" + ref, pulled.origin());
            Path pulledRoot = other.contentDir(pulled.digest()).resolve("rootfs");
            assertFalse(Files.exists(pulledRoot.resolve("etc/removed-later")));
            assertEquals(Files.readString(root.resolve("srv/app/hello.txt")), Files.readString(pulledRoot.resolve("srv/app/hello.txt")));
            assertTrue(progress.stream().anyMatch(l -> l.startsWith("fetching layer sha256:")), progress.toString());

            // the registry refuses what it does not have, and the import says so
            ImageException e = org.junit.jupiter.api.Assertions.assertThrows(ImageException.class,
                    () -> store.pull(registry + "/berth/absent:v1", "absent", ImportLimits.DEFAULT, RegistryClient.Credentials.NONE, true, progress::add));
            assertTrue(e.getMessage().contains("HTTP 404"), e.getMessage());
        }
    }
}
