package dev.berth.engine.image;

import java.util.List;

/**
 * What {@code list_images} and {@code berth image list} show of one named image.
 *
 * @param name   the name it is opened by ({@code open_workspace {image}})
 * @param digest its content digest
 * @param bytes  unpacked size
 * @param baseDiskBytes size of its ext4 base (microVM)
 * @param drivers isolation levels that can open it
 * @param origin where it came from
 * @param importedAt when
 */
public record ImageInfo(String name, String digest, long bytes, long baseDiskBytes, List<String> drivers, String origin,
                        String importedAt) {
    static ImageInfo of(String name, ImageRecord r) {
        return new ImageInfo(name, r.digest(), r.treeBytes(), r.baseDiskBytes(), r.drivers(), r.origin(), r.importedAt());
    }
}
