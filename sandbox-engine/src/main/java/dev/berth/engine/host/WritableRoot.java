package dev.berth.engine.host;

import dev.berth.engine.spi.RootImage;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;

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
        Path marker = layer.resolve(SEEDED);
        boolean seedHomes = !Files.isDirectory(homes, LinkOption.NOFOLLOW_LINKS);
        boolean seedEtc = !Files.exists(marker, LinkOption.NOFOLLOW_LINKS);
        if (!seedHomes && !seedEtc) return;
        Path etc = layer.resolve(ETC);
        Path from = image == null ? baseEtc : image.rootTree().resolve("etc");
        Path imageHome = image == null ? null : image.rootTree().resolve("home");
        // one process for the copies and their owner (a workspace's open waits for it): -n keeps the workspace's own
        // hosts file (GuestNames); the copies belong to the workspace's root
        HostCommand.exec("sh", "-c", """
                set -e
                if [ "$1" = 1 ]; then
                  mkdir -p "$4"
                  if [ -n "$6" ] && [ -d "$6" ]; then cp -a --no-preserve=ownership "$6/." "$4"; fi
                  if [ -n "$7" ]; then chown -R --no-dereference "$7" "$4"; fi
                fi
                if [ "$2" = 1 ]; then
                  mkdir -p "$5"
                  if [ -d "$3" ]; then cp -a -n --no-preserve=ownership "$3/." "$5"; fi
                  if [ -n "$7" ]; then chown -R --no-dereference "$7" "$5"; fi
                fi
                """, "berth-seed", seedHomes ? "1" : "0", seedEtc ? "1" : "0", from.toString(), homes.toString(), etc.toString(),
                imageHome == null ? "" : imageHome.toString(), layout.uid() < 0 ? "" : layout.uid() + ":" + layout.uid());
        if (!seedEtc) return;
        if (image != null) {
            // the names every workspace sees (GuestNames): before, bound read-only over the image's own files
            List<Path> written = new ArrayList<>();
            for (String name : List.of("hostname", "resolv.conf")) {
                Path p = etc.resolve(name);
                if (!Files.isSymbolicLink(p)) written.add(Files.copy(baseEtc.resolve(name), p, StandardCopyOption.REPLACE_EXISTING));
            }
            if (!GuestNames.imageHasNsswitch(image.rootTree()) && !Files.isSymbolicLink(etc.resolve("nsswitch.conf"))) {
                written.add(Files.copy(baseEtc.resolve("nsswitch.conf"), etc.resolve("nsswitch.conf"), StandardCopyOption.REPLACE_EXISTING));
            }
            if (layout.uid() >= 0) {
                for (Path p : written) {
                    Files.setAttribute(p, "unix:uid", layout.uid(), LinkOption.NOFOLLOW_LINKS);
                    Files.setAttribute(p, "unix:gid", layout.uid(), LinkOption.NOFOLLOW_LINKS);
                }
            }
        }
        Files.writeString(marker, "1\n");
    }

    /** Whether the image brings a {@code /home} its root can have the workspace's bound over (a directory). */
    public static boolean canMountHome(RootImage image) {
        return image == null || Files.isDirectory(image.rootTree().resolve("home"), LinkOption.NOFOLLOW_LINKS);
    }
}
