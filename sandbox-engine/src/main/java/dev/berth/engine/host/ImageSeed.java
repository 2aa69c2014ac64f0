package dev.berth.engine.host;

import dev.berth.engine.spi.RootImage;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.Map;

/**
 * The image hook of the drivers on the host kernel (namespace, gVisor), beyond entering the image's root tree
 * read-only: a new workspace's writable
 * directories ({@code /root}, {@code /usr/local}, {@code /var}) are mounted over the image's, so they start as
 * copies of what the image has there (a package database in {@code /var/lib}, tools in {@code /usr/local}). The
 * copies belong to the workspace's uid, as everything it writes does (one uid inside the sandbox). Stateless.
 */
public final class ImageSeed {
    private static final Map<String, String> SEEDED = Map.of("root", "home", "usr/local", "usr-local", "var", "var");

    private ImageSeed() {}

    public static void seed(RootImage image, Layout layout) throws IOException {
        for (var e : SEEDED.entrySet()) {
            Path from = image.rootTree().resolve(e.getKey());
            if (!Files.isDirectory(from, LinkOption.NOFOLLOW_LINKS)) continue;
            try (var s = Files.list(from)) {
                if (s.findAny().isEmpty()) continue;
            }
            Path to = layout.layer().resolve(e.getValue());
            HostCommand.exec("cp", "-a", "--no-preserve=ownership", from + "/.", to.toString());
            layout.chownForSandbox(to);
        }
    }
}
