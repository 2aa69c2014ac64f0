package dev.berth.engine.microvm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link DiskLayers#chain} reads backing files from the qcow2 headers itself: it must name the same files, in the same
 * form, as {@code qemu-img info --backing-chain} (which it replaced on the start path). Needs qemu-img only.
 */
class DiskLayersChainTest {

    @TempDir
    Path dir;

    private static void img(String... args) throws Exception {
        List<String> cmd = new java.util.ArrayList<>(List.of("qemu-img", "create", "-q", "-f", "qcow2"));
        cmd.addAll(List.of(args));
        ImageBuilder.run(cmd, 60);
    }

    @Test
    void chain_ofLayersWithRelativeNames_isWhatQemuImgSays() throws Exception {
        Path layers = DiskLayers.ensureDir(dir);
        img(layers.resolve("d-a.qcow2").toString(), "64M");
        img("-u", "-F", "qcow2", "-b", "layers/d-a.qcow2", layers.resolve("d-b.qcow2").toString(), "64M");
        img("-u", "-F", "qcow2", "-b", "layers/d-b.qcow2", dir.resolve("data.qcow2").toString(), "64M");
        List<Path> ours = DiskLayers.chain(dir.resolve("data.qcow2"));
        assertEquals(DiskLayers.chainByQemuImg(dir.resolve("data.qcow2")), ours);
        assertEquals(2, ours.size(), ours.toString());
        assertEquals(List.of(), DiskLayers.chain(layers.resolve("d-a.qcow2")), "a layer without backing has no chain");
    }

    @Test
    void chain_withAbsoluteAndRawBacking_isWhatQemuImgSays() throws Exception {
        Path raw = dir.resolve("base.raw");
        ImageBuilder.run(List.of("truncate", "-s", "64M", raw.toString()), 30);
        img("-u", "-F", "raw", "-b", raw.toString(), dir.resolve("mid.qcow2").toString(), "64M");
        img("-u", "-F", "qcow2", "-b", dir.resolve("mid.qcow2").toString(), dir.resolve("top.qcow2").toString(), "64M");
        assertEquals(DiskLayers.chainByQemuImg(dir.resolve("top.qcow2")), DiskLayers.chain(dir.resolve("top.qcow2")));
        assertEquals(2, DiskLayers.chain(dir.resolve("top.qcow2")).size());
        assertNull(DiskLayers.qcow2Backing(raw), "a raw file is not read as qcow2");
    }

    @Test
    void qcow2Backing_ofTruncatedHeader_isNotUnderstood() throws Exception {
        Path f = dir.resolve("short.qcow2");
        img(f.toString(), "64M");
        byte[] head = java.util.Arrays.copyOf(Files.readAllBytes(f), 12);
        Files.write(f, head);
        assertNull(DiskLayers.qcow2Backing(f));
        assertTrue(Files.size(f) == 12);
    }
}
