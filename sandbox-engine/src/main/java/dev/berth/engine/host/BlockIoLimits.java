package dev.berth.engine.host;

import dev.berth.engine.spi.IoLimits;
import dev.berth.engine.spi.Limit;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * Disk I/O limits of a workspace on the host kernel, keyed to the block device that backs the workspace's writable
 * layer (today the loop device of its ext4 image; whatever filesystem backs the layer later, {@link #deviceOf} finds
 * its device): cgroup v1 {@code blkio.throttle.*_device} or cgroup v2 {@code io.max}.
 *
 * <p>What each direction really gets differs by hierarchy, and is reported so: reads are throttled on both (a read
 * that misses the page cache is submitted by the reading process). Writes under v1 only when the writing process
 * submits them itself (O_DIRECT, or the flush of its own {@code fsync}); ordinary buffered writes are flushed later
 * by the kernel's writeback threads or the journal's commit thread, which v1 charges to the root cgroup, so they are
 * not throttled. A fsync is held only for what is still dirty when it runs: CI once measured 1.9 s for 8 MiB at
 * 1 MiB/s after the journal's periodic commit had flushed most of the file, so only O_DIRECT is promised. Under v2 with
 * the memory and io controllers, writeback is charged to the workspace's group (cgroup writeback) and io.max holds
 * for buffered writes as well. Stateless.
 */
public final class BlockIoLimits {
    private BlockIoLimits() {}

    static final String V1_WRITE_GAP = "not enforced for buffered writes: cgroup v1 cannot throttle the kernel's writeback"
            + " (charged to the root cgroup), nor the journal's commits (ext4's jbd2 flushes a file's dirty data on its own"
            + " timer), so even a run's fsync is held only for what is still dirty when it flushes; direct writes (O_DIRECT)"
            + " are held to it by ";

    /**
     * {@code major:minor} of the block device backing the filesystem mounted at {@code mountPoint}, or null when none
     * is mounted there or it has no block device. A filesystem with an anonymous device number (major 0: btrfs, overlay)
     * is resolved through its mount source.
     */
    public static String deviceOf(Path mountPoint) {
        String p = mountPoint.toAbsolutePath().normalize().toString();
        String found = null;
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/mountinfo"))) {
                String[] f = line.split(" ");
                if (f.length > 4 && f[4].replace("\\040", " ").equals(p)) {
                    String dev = f[2];
                    if (!dev.startsWith("0:")) {
                        found = dev;
                    } else {
                        int dash = java.util.Arrays.asList(f).indexOf("-");
                        found = dash > 0 && dash + 2 < f.length ? rdev(Path.of(f[dash + 2])) : null;
                    }
                }
            }
        } catch (IOException e) {
            return null;
        }
        return found; // the last mount on the point is the one in use
    }

    /**
     * {@code major:minor} of the block device holding {@code file}'s filesystem, or null when it has none of its own
     * (an anonymous device number: btrfs, overlay, tmpfs) or the file cannot be read.
     */
    public static String deviceOfFile(Path file) {
        try {
            long dev = ((Number) Files.getAttribute(file, "unix:dev")).longValue();
            long major = ((dev >>> 32) & 0xfffff000L) | ((dev >>> 8) & 0xfffL);
            long minor = ((dev >>> 12) & 0xffffff00L) | (dev & 0xffL);
            return major == 0 ? null : major + ":" + minor;
        } catch (IOException | UnsupportedOperationException | ClassCastException e) {
            return null;
        }
    }

    private static String rdev(Path source) {
        try {
            if (!source.isAbsolute() || !Files.exists(source)) return null;
            long rdev = ((Number) Files.getAttribute(source, "unix:rdev")).longValue();
            if (rdev == 0) return null;
            long major = ((rdev >>> 32) & 0xfffff000L) | ((rdev >>> 8) & 0xfffL);
            long minor = ((rdev >>> 12) & 0xffffff00L) | (rdev & 0xffL);
            return major + ":" + minor;
        } catch (IOException | UnsupportedOperationException | ClassCastException e) {
            return null;
        }
    }

    /**
     * Writes {@code io} for device {@code dev} into the cgroup {@code group} (a v1 blkio group, or a v2 group with the
     * io controller) and reads each value back; returns the four limits as they hold. {@code group} must exist.
     */
    public static List<Limit> apply(Path group, boolean v1, String dev, IoLimits io) {
        if (!io.any()) return Limit.io(io, n -> null);
        if (dev == null) return Limit.ioNotEnforced(io, "the workspace's layer has no block device of its own to throttle (no disk image)");
        if (v1) {
            for (String n : IoLimits.NAMES) {
                if (io.value(n) > 0) write(group.resolve(v1File(n)), dev + " " + io.value(n));
            }
        } else {
            StringBuilder s = new StringBuilder(dev);
            for (String n : IoLimits.NAMES) if (io.value(n) > 0) s.append(' ').append(v2Key(n)).append('=').append(io.value(n));
            write(group.resolve("io.max"), s.toString());
        }
        return report(group, v1, dev, io);
    }

    /** The limits as the group holds them now (read back from the cgroup files). */
    public static List<Limit> report(Path group, boolean v1, String dev, IoLimits io) {
        if (dev == null) return Limit.ioNotEnforced(io, "the workspace's layer has no block device of its own to throttle (no disk image)");
        String v2 = v1 ? "" : lineFor(group.resolve("io.max"), dev);
        return Limit.io(io, n -> {
            long v = io.value(n);
            String unit = IoLimits.unit(n);
            boolean set = v1 ? (dev + " " + v).equals(lineFor(group.resolve(v1File(n)), dev)) : v2.contains(v2Key(n) + "=" + v);
            if (!set) {
                return Limit.notEnforced(n, v, unit, "the cgroup " + (v1 ? "v1 blkio" : "v2 io") + " controller did not take the limit"
                        + " for device " + dev + " (not available to Berth here)");
            }
            String how = v1 ? "cgroup v1 " + v1File(n) + " on device " + dev + " (the block device behind the workspace's disk)"
                    : "cgroup v2 io.max " + v2Key(n) + " on device " + dev + " (the block device behind the workspace's disk)";
            if (v1 && !IoLimits.read(n)) return Limit.notEnforced(n, v, unit, V1_WRITE_GAP + how);
            return Limit.enforced(n, v, unit, how + (v1 ? "; reads that miss the page cache" : "; buffered writes too, through cgroup writeback"));
        });
    }

    /** What {@link #apply} would give on this host for a workspace with a disk image, without creating anything. */
    public static List<Limit> predict(IoLimits io) {
        String h = CgroupLimits.hierarchy();
        Path root = Path.of("/sys/fs/cgroup");
        boolean v1 = h.equals("v1");
        boolean available = v1 ? Files.exists(root.resolve("blkio/blkio.throttle.read_bps_device"))
                : h.equals("v2") && readable(root.resolve("cgroup.subtree_control")).contains("io");
        if (!available) return Limit.ioNotEnforced(io, "the cgroup " + h + " " + (v1 ? "blkio" : "io") + " controller is not available to Berth");
        return Limit.io(io, n -> {
            long v = io.value(n);
            String how = "cgroup " + (v1 ? "v1 " + v1File(n) : "v2 io.max " + v2Key(n)) + " on the block device behind the workspace's disk";
            return v1 && !IoLimits.read(n) ? Limit.notEnforced(n, v, IoLimits.unit(n), V1_WRITE_GAP + how)
                    : Limit.enforced(n, v, IoLimits.unit(n), how);
        });
    }

    static String v1File(String name) {
        return switch (name) {
            case "io_read_bps" -> "blkio.throttle.read_bps_device";
            case "io_write_bps" -> "blkio.throttle.write_bps_device";
            case "io_read_iops" -> "blkio.throttle.read_iops_device";
            default -> "blkio.throttle.write_iops_device";
        };
    }

    static String v2Key(String name) {
        return switch (name) {
            case "io_read_bps" -> "rbps";
            case "io_write_bps" -> "wbps";
            case "io_read_iops" -> "riops";
            default -> "wiops";
        };
    }

    private static String lineFor(Path file, String dev) {
        for (String l : readable(file).split("\n")) if (l.startsWith(dev + " ")) return l.strip();
        return "";
    }

    private static void write(Path file, String value) {
        try {
            Files.writeString(file, value);
        } catch (IOException e) {
            // read back by report(): a value that did not take is reported as not enforced
        }
    }

    private static String readable(Path p) {
        try {
            return Files.readString(p);
        } catch (IOException e) {
            return "";
        }
    }
}
