package dev.berth.engine.microvm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/** Overlays made from a template ({@link OverlayTemplates#create}) are the bytes qemu-img itself would write. */
class DiskLayersOverlayTest {
    @TempDir Path dir;

    @Test
    void overlayOnALayer_isByteForByteWhatQemuImgWrites_andQemuReadsThroughIt() throws Exception {
        assumeTrue(MicrovmDriver.which("qemu-img").isPresent(), "qemu-img not installed");
        String name = DiskLayers.newId("d-") + ".qcow2";
        Path layers = Files.createDirectories(dir.resolve(DiskLayers.DIR));
        ImageBuilder.run(List.of("qemu-img", "create", "-q", "-f", "qcow2", layers.resolve(name).toString(), "64M"), 60);
        ImageBuilder.run(List.of("qemu-io", "-c", "write -P 0x5a 1M 64k", layers.resolve(name).toString()), 60);
        long size = DiskLayers.virtualSize(layers.resolve(name));
        assertEquals(64L << 20, size, "virtual size read from the qcow2 header");

        Path ours = dir.resolve("ours.qcow2");
        Path theirs = dir.resolve("theirs.qcow2");
        OverlayTemplates templates = new OverlayTemplates();
        templates.create(ours, DiskLayers.DIR + "/" + name, size);
        templates.create(dir.resolve("second.qcow2"), DiskLayers.DIR + "/" + name, size); // from the cached template
        ImageBuilder.run(List.of("qemu-img", "create", "-q", "-f", "qcow2", "-u", "-b", DiskLayers.DIR + "/" + name, "-F", "qcow2",
                theirs.toString(), Long.toString(size)), 60);
        assertArrayEquals(Files.readAllBytes(theirs), Files.readAllBytes(ours));
        assertArrayEquals(Files.readAllBytes(theirs), Files.readAllBytes(dir.resolve("second.qcow2")));

        JsonNode info = JsonMapper.builder().build().readTree(
                ImageBuilder.run(List.of("qemu-img", "info", "--output=json", ours.toString()), 60));
        assertEquals(DiskLayers.DIR + "/" + name, info.path("backing-filename").asString());
        assertEquals(size, info.path("virtual-size").asLong());
        ImageBuilder.run(List.of("qemu-img", "check", ours.toString()), 60); // fails (exit != 0) on a damaged image
        // the layer's data reads through the overlay
        String read = ImageBuilder.run(List.of("qemu-io", "-r", "-c", "read -P 0x5a 1M 64k", ours.toString()), 60);
        assertEquals(true, read.contains("read 65536/65536 bytes"), read);
    }

    @Test
    void overlayOnAnythingElse_goesToQemuImg() throws Exception {
        assumeTrue(MicrovmDriver.which("qemu-img").isPresent(), "qemu-img not installed");
        Path base = dir.resolve("base.qcow2");
        ImageBuilder.run(List.of("qemu-img", "create", "-q", "-f", "qcow2", base.toString(), "32M"), 60);
        Path over = dir.resolve("over.qcow2");
        new OverlayTemplates().create(over, "base.qcow2", DiskLayers.virtualSize(base));
        JsonNode info = JsonMapper.builder().build().readTree(
                ImageBuilder.run(List.of("qemu-img", "info", "--output=json", over.toString()), 60));
        assertEquals("base.qcow2", info.path("backing-filename").asString());
        assertEquals(32L << 20, info.path("virtual-size").asLong());
    }
}
