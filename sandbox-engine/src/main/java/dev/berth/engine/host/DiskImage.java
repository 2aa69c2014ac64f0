package dev.berth.engine.host;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A namespace workspace's writable layer as a size-limited ext4 filesystem: a sparse image file in the state
 * directory, loop-mounted (nosuid, nodev) on the runtime directory while the sandbox runs. It is the disk quota
 * (writes beyond it get ENOSPC) and it keeps host paths out of the sandbox's mount table: a bind from inside the
 * image shows its path within the image, not where the image lives. Needs root (mount); stateless.
 */
public final class DiskImage {
    public static final String FILE = "disk.ext4";

    private DiskImage() {}

    /** Creates an empty image of {@code mib} MiB whose root belongs to {@code uid}. */
    public static void create(Path image, int mib, int uid) throws IOException {
        long free = Files.getFileStore(image.getParent()).getUsableSpace() >> 20;
        if (free < mib) {
            // sparse, so this is not a reservation; but a quota the host cannot hold even once is refused with numbers
            throw new IOException("the workspace's disk of " + mib + " MiB does not fit: " + free + " MiB are free on the host"
                    + " filesystem of " + image.getParent() + "; ask for a smaller disk_mib or free space");
        }
        Path tmp = image.resolveSibling(FILE + ".tmp");
        Files.deleteIfExists(tmp);
        HostCommand.exec("truncate", "-s", mib + "M", tmp.toString());
        HostCommand.exec("mkfs.ext4", "-q", "-F", "-m", "0", "-L", "workspace",
                "-E", "lazy_itable_init=1,lazy_journal_init=1,root_owner=" + uid + ":" + uid, tmp.toString());
        Files.setPosixFilePermissions(tmp, java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
        Files.move(tmp, image, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
    }

    /**
     * Mounts the image on {@code at} (created if missing); the mount's root is shut to every other uid. With
     * {@code discard}, space freed inside is given back to the host (the loop device punches holes in the file).
     */
    public static void mount(Path image, Path at) throws IOException {
        Files.createDirectories(at);
        if (isMounted(at)) unmount(at); // left by a crash
        HostCommand.exec("mount", "-t", "ext4", "-o", "loop,nosuid,nodev,noatime,discard", image.toString(), at.toString());
        Files.setPosixFilePermissions(at, java.nio.file.attribute.PosixFilePermissions.fromString("rwx------"));
    }

    /**
     * Mounts the image on {@code at} with the files its previous owner ({@code diskUid}) wrote shown as, and written
     * as, {@code uid} (an idmapped mount, {@link IdmappedMount}): a fork takes over its snapshot's files in constant
     * time. The image is mounted on {@code raw} first, which is detached again once {@code at} holds it.
     */
    public static void mountMapped(Path image, Path raw, Path at, int diskUid, int uid) throws IOException {
        mount(image, raw);
        try {
            if (isMounted(at)) unmount(at); // left by a crash
            IdmappedMount.bind(raw, at, diskUid, uid);
        } finally {
            unmount(raw);
        }
        Files.setPosixFilePermissions(at, java.nio.file.attribute.PosixFilePermissions.fromString("rwx------"));
    }

    /**
     * Detaches the mount at once (lazily, so it never fails for a busy filesystem: nothing can reach the tree
     * through {@code at} afterwards, which is what matters before the runtime directory is deleted).
     */
    public static void unmount(Path at) {
        if (!isMounted(at)) return;
        try {
            HostCommand.exec("umount", "-l", at.toString());
        } catch (IOException e) {
            System.getLogger(DiskImage.class.getName()).log(System.Logger.Level.WARNING, "unmounting " + at + ": " + e.getMessage());
        }
    }

    /** Flushes and blocks writes (FIFREEZE) so that a copy of the image is consistent; {@link #thaw} undoes it. */
    public static boolean freeze(Path at) {
        try {
            HostCommand.exec("fsfreeze", "--freeze", at.toString());
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    public static void thaw(Path at) {
        try {
            HostCommand.exec("fsfreeze", "--unfreeze", at.toString());
        } catch (IOException e) {
            System.getLogger(DiskImage.class.getName()).log(System.Logger.Level.WARNING, "thawing " + at + ": " + e.getMessage());
        }
    }

    public static boolean isMounted(Path at) {
        String p = at.toAbsolutePath().normalize().toString();
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/mountinfo"))) {
                String[] f = line.split(" ");
                if (f.length > 4 && f[4].replace("\\040", " ").equals(p)) return true;
            }
        } catch (IOException e) {
            return false;
        }
        return false;
    }
}
