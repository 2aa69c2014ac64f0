package dev.berth.engine.microvm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.attribute.FileTime;
import org.junit.jupiter.api.Test;

/** The test image is cached by content: same inputs, same directory and bytes; a changed input, a new version. */
class ImageBuilderTest {

    @Test
    void testImage_sameInputsTwice_isBuiltOnceAndReused() throws Exception {
        ImageBuilder b = TestImages.builder();
        GuestImage first = b.testImage();
        FileTime stamp = Files.getLastModifiedTime(first.initramfs().resolveSibling("stamp"));
        GuestImage second = b.testImage();
        assertEquals(first, second);
        assertEquals(stamp, Files.getLastModifiedTime(second.initramfs().resolveSibling("stamp")), "not rebuilt");
        assertTrue(Files.size(first.initramfs()) > 1 << 20);
        assertTrue(Files.size(first.kernel()) > 1 << 20);
    }

    @Test
    void testImage_otherAgentBinary_getsAnotherVersionAndIsReproducible() throws Exception {
        ImageBuilder b = TestImages.builder();
        byte[] agent = "#!/bin/sh\nexit 0\n".getBytes(StandardCharsets.UTF_8);
        GuestImage x = b.testImage(agent);
        assertNotEquals(b.testImage().id(), x.id());
        byte[] bytes = Files.readAllBytes(x.initramfs());
        // Rebuild from scratch: byte-identical initramfs.
        ImageBuilder.deleteTree(x.initramfs().getParent());
        GuestImage y = b.testImage(agent);
        assertEquals(x.id(), y.id());
        assertArrayEquals(bytes, Files.readAllBytes(y.initramfs()));
    }
}
