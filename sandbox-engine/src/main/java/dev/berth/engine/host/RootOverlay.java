package dev.berth.engine.host;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;

/**
 * An imported image's root made writable for one workspace (issue 32: a package manager writes {@code /usr}): an
 * overlay mounted by the server (root) with the image's read-only tree as its lower layer and two directories of the
 * workspace's own layer as its upper and work directories ({@link #UPPER}, {@link #WORK}). What the workload changes
 * lands in its layer, so it persists across park and resume and snapshot and fork carry it like every other file of
 * the layer; the image is never written (an overlay never writes its lower layer). Mounted {@code nosuid,nodev}, as
 * the layer is. The overlay is in the runtime directory ({@link #merged}); {@link Layout#release} detaches it before
 * the layer. Stateless.
 */
public final class RootOverlay {
    /** The layer directory holding what the workload changed in the image's root. */
    public static final String UPPER = "root-upper";
    /** The overlay's work directory, on the same filesystem as {@link #UPPER}. */
    public static final String WORK = "root-work";

    private RootOverlay() {}

    /** Where the writable root is mounted while the workspace runs. */
    public static Path merged(Path runtime) { return runtime.resolve("root"); }

    /**
     * Mounts the overlay of {@code lower} (the image's tree, or its idmapped mount) and the layer's upper directory at
     * {@link #merged}; returns it.
     */
    public static Path mount(Path lower, Layout layout) throws IOException {
        Path upper = layout.layer().resolve(UPPER), work = layout.layer().resolve(WORK);
        if (!Files.isDirectory(upper, LinkOption.NOFOLLOW_LINKS)) {
            Files.createDirectories(upper);
            // the root directory of the merged tree is the upper one: root's inside, with the image's root's mode
            HostCommand.exec("chmod", "0755", upper.toString());
            layout.chownForSandbox(upper);
        }
        Files.createDirectories(work);
        Path merged = merged(layout.runtime());
        Files.createDirectories(merged);
        if (DiskImage.isMounted(merged)) DiskImage.unmount(merged); // left by a crash
        for (Path p : new Path[] {lower, upper, work}) {
            String s = p.toString();
            if (s.contains(",") || s.contains(":") || s.contains("\\")) throw new IOException("cannot name " + p + " in overlay options");
        }
        HostCommand.exec("mount", "-t", "overlay", "overlay", "-o", "nosuid,nodev,index=off,xino=off,redirect_dir=off,metacopy=off,lowerdir="
                + lower + ",upperdir=" + upper + ",workdir=" + work, merged.toString());
        return merged;
    }
}
