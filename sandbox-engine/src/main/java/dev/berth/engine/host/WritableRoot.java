package dev.berth.engine.host;

import dev.berth.engine.spi.RootImage;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;

/**
 * The parts of a workspace's root that a normal machine writes and the levels on the host kernel (namespace, gVisor)
 * used to enter read-only: {@code /etc} (accounts: {@code useradd}, {@code passwd}, a package's configuration) and
 * {@code /home} (the users' homes). Each is a directory of the workspace's own writable layer ({@link #ETC},
 * {@link #HOMES}), so it persists across park and resume and is carried by snapshot and fork like the rest of the
 * layer; nothing is ever written into the shared built-in {@code /etc} or an imported image.
 *
 * <p>The layer's {@code /etc} is seeded once ({@link #seed}), from the built-in curated {@code /etc} or from the
 * imported image's own, and from then on belongs to the workspace: a later start, a new agent or a new built-in
 * {@code /etc} never overwrites what the workload changed. A workspace made before this layer existed is seeded at
 * its next start; the one file it had there already (its own {@code /etc/hosts}) is kept. The copies belong to the
 * workspace's root (one owner, as {@link ImageSeed}'s copies). Stateless.
 */
public final class WritableRoot {
    /** The layer directory entered as {@code /etc} (the same one that held only the workspace's hosts file before). */
    public static final String ETC = "etc";
    /** The layer directory entered as {@code /home}. */
    public static final String HOMES = "homes";
    /** Written into the layer once its /etc is seeded (the layer's root is outside every bind: the workload cannot make it). */
    static final String SEEDED = ".etc-seeded";

    private WritableRoot() {}

    /**
     * Seeds the layer's {@code /etc} if it was not seeded yet, and makes {@code /home}'s directory.
     *
     * @param baseEtc the built-in curated /etc (used when {@code image} is null)
     * @param image   the imported image, or null
     */
    public static void seed(Layout layout, Path baseEtc, RootImage image) throws IOException {
        Path layer = layout.layer();
        Path homes = layer.resolve(HOMES);
        if (!Files.isDirectory(homes, LinkOption.NOFOLLOW_LINKS)) {
            Files.createDirectories(homes);
            Path imageHome = image == null ? null : image.rootTree().resolve("home");
            if (imageHome != null && Files.isDirectory(imageHome, LinkOption.NOFOLLOW_LINKS)) {
                HostCommand.exec("cp", "-a", "--no-preserve=ownership", imageHome + "/.", homes.toString());
            }
            layout.chownForSandbox(homes);
        }
        Path marker = layer.resolve(SEEDED);
        if (Files.exists(marker, LinkOption.NOFOLLOW_LINKS)) return;
        Path etc = layer.resolve(ETC);
        Files.createDirectories(etc);
        Path from = image == null ? baseEtc : image.rootTree().resolve("etc");
        if (Files.isDirectory(from, LinkOption.NOFOLLOW_LINKS)) {
            // -n: the workspace's own hosts file (GuestNames) stays as it is
            HostCommand.exec("cp", "-a", "-n", "--no-preserve=ownership", from + "/.", etc.toString());
        }
        if (image != null) {
            // the names every workspace sees (GuestNames): before, bound read-only over the image's own files
            for (String name : java.util.List.of("hostname", "resolv.conf")) {
                Path p = etc.resolve(name);
                if (!Files.isSymbolicLink(p)) Files.copy(baseEtc.resolve(name), p, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
            }
            if (!GuestNames.imageHasNsswitch(image.rootTree()) && !Files.isSymbolicLink(etc.resolve("nsswitch.conf"))) {
                Files.copy(baseEtc.resolve("nsswitch.conf"), etc.resolve("nsswitch.conf"), java.nio.file.StandardCopyOption.REPLACE_EXISTING);
            }
        }
        layout.chownForSandbox(etc);
        Files.writeString(marker, "1\n");
    }

    /** Whether the image brings a {@code /home} its root can have the workspace's bound over (a directory). */
    public static boolean canMountHome(RootImage image) {
        return image == null || Files.isDirectory(image.rootTree().resolve("home"), LinkOption.NOFOLLOW_LINKS);
    }
}
