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
        mountMapped(image, raw, at, diskUid, uid, 1);
    }

    /** As {@link #mountMapped(Path, Path, Path, int, int)} for {@code count} ids from each. */
    public static void mountMapped(Path image, Path raw, Path at, int diskUid, int uid, int count) throws IOException {
        mount(image, raw);
        try {
            if (isMounted(at)) unmount(at); // left by a crash
            IdmappedMount.bind(raw, at, diskUid, uid, count);
        } finally {
            unmount(raw);
        }
        Files.setPosixFilePermissions(at, java.nio.file.attribute.PosixFilePermissions.fromString("rwx------"));
    }

    /** Attempts at a plain unmount of a busy filesystem before it is detached lazily and reported. */
    private static final int UNMOUNT_TRIES = 5;

    /**
     * Unmounts {@code at}. A busy filesystem (a process still has a file, its directory or its root in it) is tried
     * again a few times, then detached lazily so that nothing reaches the tree through {@code at} (what matters before
     * the runtime directory is deleted), and reported with the processes holding it: the filesystem, and its loop
     * device, live on until they exit. Never silently left.
     */
    public static void unmount(Path at) {
        if (!isMounted(at)) return;
        String why = null;
        for (int i = 0; i < UNMOUNT_TRIES; i++) {
            try {
                HostCommand.exec("umount", at.toString());
                return;
            } catch (IOException e) {
                why = e.getMessage();
            }
            if (!isMounted(at)) return;
            try {
                Thread.sleep(50L << i); // 50 ms .. 0.8 s: holders on their way out (a process being reaped)
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        String held = holders(at);
        var log = System.getLogger(DiskImage.class.getName());
        try {
            HostCommand.exec("umount", "-l", at.toString());
            log.log(System.Logger.Level.WARNING, "unmounting " + at + ": still busy after " + UNMOUNT_TRIES + " tries (" + why
                    + "); held by " + held + "; detached lazily: the filesystem stays in use until they exit");
        } catch (IOException e) {
            log.log(System.Logger.Level.WARNING, "unmounting " + at + " failed (" + e.getMessage() + "); held by " + held
                    + "; left mounted for the next start-up's clean-up");
        }
    }

    /**
     * The processes that hold {@code at}: a working directory, root, executable or open file in it, or a mount
     * namespace of their own with it mounted; as "pid (name)" items, or "no process found" (a kernel reference).
     */
    public static String holders(Path at) {
        String p = at.toAbsolutePath().normalize().toString();
        String self = namespaceOf(Path.of("/proc/self"));
        java.util.List<String> out = new java.util.ArrayList<>();
        try (var procs = Files.list(Path.of("/proc"))) {
            for (Path proc : procs.filter(d -> d.getFileName().toString().chars().allMatch(Character::isDigit)).toList()) {
                String how = holds(proc, p, self);
                if (how != null) out.add(proc.getFileName() + " (" + comm(proc) + ", " + how + ")");
            }
        } catch (IOException e) {
            return "unknown processes (/proc unreadable: " + e.getMessage() + ")";
        }
        return out.isEmpty() ? "no process found" : String.join(", ", out);
    }

    private static String holds(Path proc, String at, String selfNamespace) {
        for (String link : new String[] {"cwd", "root", "exe"}) {
            if (under(readLink(proc.resolve(link)), at)) return link;
        }
        try (var fds = Files.list(proc.resolve("fd"))) {
            for (Path fd : fds.toList()) {
                if (under(readLink(fd), at)) return "open file";
            }
        } catch (IOException | RuntimeException gone) {
            // ended, or not ours to read
        }
        String ns = namespaceOf(proc);
        if (ns != null && !ns.equals(selfNamespace) && mountPoints(proc.resolve("mountinfo")).contains(at)) return "its mount namespace";
        return null;
    }

    private static boolean under(String path, String at) {
        return path != null && (path.equals(at) || path.startsWith(at + "/"));
    }

    private static String readLink(Path link) {
        try {
            return Files.readSymbolicLink(link).toString();
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    private static String namespaceOf(Path proc) {
        return readLink(proc.resolve("ns/mnt"));
    }

    private static String comm(Path proc) {
        try {
            return Files.readString(proc.resolve("comm")).strip();
        } catch (IOException e) {
            return "?";
        }
    }

    /** The mount points at or below {@code dir} in this process's mount table, deepest first. */
    public static java.util.List<Path> mountsUnder(Path dir) {
        String d = dir.toAbsolutePath().normalize().toString();
        return mountPoints(Path.of("/proc/self/mountinfo")).stream().filter(m -> under(m, d))
                .sorted(java.util.Comparator.comparingInt(String::length).reversed()).map(Path::of).toList();
    }

    private static java.util.List<String> mountPoints(Path mountinfo) {
        try {
            java.util.List<String> out = new java.util.ArrayList<>();
            for (String line : Files.readAllLines(mountinfo)) {
                String[] f = line.split(" ");
                if (f.length > 4) out.add(f[4].replace("\\040", " "));
            }
            return out;
        } catch (IOException | RuntimeException e) {
            return java.util.List.of();
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
