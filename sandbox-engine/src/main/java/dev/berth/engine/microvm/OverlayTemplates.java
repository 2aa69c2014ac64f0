package dev.berth.engine.microvm;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Pattern;

/**
 * Empty qcow2 overlays on a layer ({@link DiskLayers}), made from a template per virtual size instead of a
 * {@code qemu-img} spawn each: spawning {@code qemu-img create} was 30-40 ms of a 90 ms snapshot and of every fork's
 * start. One instance per driver, shared by its starts and sandboxes; thread-safe.
 */
final class OverlayTemplates {
    /** What every layer's name looks like from the directory that uses it: fixed length ({@link DiskLayers#newId}). */
    private static final Pattern LAYER_REF = Pattern.compile(DiskLayers.DIR + "/d-[0-9a-f]{16}\\.qcow2");
    private static final String PLACEHOLDER_REF = DiskLayers.DIR + "/d-" + "0".repeat(16) + ".qcow2";

    /** Empty overlays by virtual size, made once by qemu-img on {@link #PLACEHOLDER_REF}. */
    private final Map<Long, byte[]> templates = new ConcurrentHashMap<>();

    /**
     * Creates {@code file}: an empty qcow2 overlay of {@code virtualSize} bytes on {@code backing} (a name relative to
     * the overlay's directory, not checked: QEMU opens it). On a layer (every snapshot's and freeze's case) it is a
     * copy of an overlay qemu-img made once for that size on a placeholder name of the same length, with the name
     * replaced in its header's backing-file field. Anything else goes to qemu-img as before.
     */
    void create(Path file, String backing, long virtualSize) throws IOException {
        if (!LAYER_REF.matcher(backing).matches()) {
            ImageBuilder.run(List.of("qemu-img", "create", "-q", "-f", "qcow2", "-u", "-b", backing, "-F", "qcow2",
                    file.toString(), Long.toString(virtualSize)), 60);
            return;
        }
        byte[] template = templates.get(virtualSize);
        if (template == null) {
            template = template(virtualSize);
            templates.putIfAbsent(virtualSize, template);
        }
        byte[] image = template.clone();
        int at = (int) ByteBuffer.wrap(image).getLong(8);
        byte[] name = backing.getBytes(StandardCharsets.US_ASCII);
        System.arraycopy(name, 0, image, at, name.length);
        Files.write(file, image); // replaces a file of that name, as qemu-img create does
    }

    /** An empty overlay on {@link #PLACEHOLDER_REF} as qemu-img writes it, checked to name it where the header says. */
    static byte[] template(long virtualSize) throws IOException {
        Path tmp = Files.createTempFile("berth-overlay-", ".qcow2");
        try {
            Files.delete(tmp);
            ImageBuilder.run(List.of("qemu-img", "create", "-q", "-f", "qcow2", "-u", "-b", PLACEHOLDER_REF, "-F", "qcow2",
                    tmp.toString(), Long.toString(virtualSize)), 60);
            byte[] image = Files.readAllBytes(tmp);
            ByteBuffer h = ByteBuffer.wrap(image);
            byte[] placeholder = PLACEHOLDER_REF.getBytes(StandardCharsets.US_ASCII);
            long at = image.length >= 32 ? h.getLong(8) : -1;
            if (image.length < 32 || h.getInt(0) != 0x514649fb || h.getInt(16) != placeholder.length || at < 32
                    || at + placeholder.length > image.length || h.getLong(24) != virtualSize
                    || !Arrays.equals(image, (int) at, (int) at + placeholder.length, placeholder, 0, placeholder.length)) {
                throw new IOException("qemu-img wrote an overlay this driver does not understand (backing name not where its header says)");
            }
            return image;
        } finally {
            Files.deleteIfExists(tmp);
        }
    }
}
