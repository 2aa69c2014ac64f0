package dev.berth.engine.host;

import dev.berth.engine.spi.Limit;
import dev.berth.engine.spi.Resources;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * CPU, memory, process-count and freezer control for a namespace workspace through cgroups (v1 controllers where the
 * host mounts them, else v2 with the controllers enabled), where the host lets Berth write them. What could not be
 * set is reported as not enforced, with the reason, rather than pretended. Thread-safe (stateless; paths per
 * workspace).
 *
 * @param groups  the cgroup directories a sandbox process must join
 * @param freezer the group whose freezer stops every process of the workspace, or null
 * @param limits  cpu, memory and pids as set up (disk is the driver's business)
 * @param io      the four I/O limits as set up on the block device behind the workspace's layer ({@link BlockIoLimits})
 */
public record CgroupLimits(List<Path> groups, Path freezer, List<Limit> limits, List<Limit> io) {
    private static final Path ROOT = Path.of("/sys/fs/cgroup");

    private static final long PERIOD_US = 100_000;

    /** No cgroups at all (Berth is not root, or the host offers none). */
    public static CgroupLimits none(Resources r, String why) {
        return new CgroupLimits(List.of(), null, List.of(Limit.notEnforced("cpu", r.vcpus(), "vcpus", why),
                Limit.notEnforced("memory", r.memoryMiB(), "MiB", why), Limit.notEnforced("pids", r.maxPids(), "processes", why)),
                Limit.ioNotEnforced(r.io(), why));
    }

    /** Which cgroup layout the host has, for {@code berth doctor} and for the limits a workspace would get. */
    public static String hierarchy() {
        if (Files.isDirectory(ROOT.resolve("memory")) && Files.isDirectory(ROOT.resolve("pids"))) return "v1";
        if (Files.exists(ROOT.resolve("cgroup.controllers"))) return "v2";
        return "none";
    }

    /**
     * Creates the groups and writes the limits; returns which paths a process must join and what holds. The I/O
     * limits go on {@code ioDevice} ({@code major:minor} of the block device behind the workspace's layer,
     * {@link BlockIoLimits#deviceOf}; null: none, I/O limits reported as not enforced).
     */
    public static CgroupLimits create(String workspaceId, Resources r, String ioDevice) {
        List<Path> groups = new ArrayList<>();
        List<Limit> io;
        List<Limit> limits = new ArrayList<>();
        Path freezer = null;
        long memBytes = (long) r.memoryMiB() << 20;
        long quota = r.vcpus() * PERIOD_US;
        switch (hierarchy()) {
            case "v1" -> {
                // one group per controller
                Path cpu = ROOT.resolve("cpu/berth").resolve(workspaceId);
                Path mem = ROOT.resolve("memory/berth").resolve(workspaceId);
                Path pids = ROOT.resolve("pids/berth").resolve(workspaceId);
                Path frz = ROOT.resolve("freezer/berth").resolve(workspaceId);
                if (write(cpu, "cpu.cfs_period_us", String.valueOf(PERIOD_US)) && write(cpu, "cpu.cfs_quota_us", String.valueOf(quota))) {
                    groups.add(cpu);
                    limits.add(Limit.enforced("cpu", r.vcpus(), "vcpus", "cgroup v1 cpu: cfs_quota_us " + quota + " per " + PERIOD_US));
                } else {
                    limits.add(Limit.notEnforced("cpu", r.vcpus(), "vcpus", "the cgroup v1 cpu controller is not writable here"));
                }
                if (write(mem, "memory.limit_in_bytes", String.valueOf(memBytes))) {
                    groups.add(mem);
                    limits.add(Limit.enforced("memory", r.memoryMiB(), "MiB", "cgroup v1 memory.limit_in_bytes (includes /tmp, a tmpfs)"));
                } else {
                    limits.add(Limit.notEnforced("memory", r.memoryMiB(), "MiB", "the cgroup v1 memory controller is not writable here"));
                }
                if (write(pids, "pids.max", String.valueOf(r.maxPids()))) {
                    groups.add(pids);
                    limits.add(Limit.enforced("pids", r.maxPids(), "processes", "cgroup v1 pids.max"));
                } else {
                    limits.add(Limit.notEnforced("pids", r.maxPids(), "processes", "the cgroup v1 pids controller is not writable here"));
                }
                Path blkio = ROOT.resolve("blkio/berth").resolve(workspaceId);
                if (Files.isDirectory(ROOT.resolve("blkio")) && mkdirs(blkio)) {
                    groups.add(blkio);
                    io = BlockIoLimits.apply(blkio, true, ioDevice, r.io());
                } else {
                    io = Limit.ioNotEnforced(r.io(), "the cgroup v1 blkio controller is not writable here");
                }
                if (Files.isDirectory(ROOT.resolve("freezer")) && mkdirs(frz)) {
                    groups.add(frz);
                    freezer = frz;
                }
            }
            case "v2" -> {
                Path g = ROOT.resolve("berth").resolve(workspaceId);
                boolean cpu = write(g, "cpu.max", quota + " " + PERIOD_US);
                boolean mem = write(g, "memory.max", String.valueOf(memBytes));
                boolean pids = write(g, "pids.max", String.valueOf(r.maxPids()));
                String no = "the cgroup v2 controller is not enabled for Berth's group (cgroup.subtree_control)";
                limits.add(cpu ? Limit.enforced("cpu", r.vcpus(), "vcpus", "cgroup v2 cpu.max") : Limit.notEnforced("cpu", r.vcpus(), "vcpus", no));
                limits.add(mem ? Limit.enforced("memory", r.memoryMiB(), "MiB", "cgroup v2 memory.max") : Limit.notEnforced("memory", r.memoryMiB(), "MiB", no));
                limits.add(pids ? Limit.enforced("pids", r.maxPids(), "processes", "cgroup v2 pids.max") : Limit.notEnforced("pids", r.maxPids(), "processes", no));
                if (Files.isDirectory(g)) {
                    groups.add(g);
                    freezer = g;
                }
                io = Files.isDirectory(g) ? BlockIoLimits.apply(g, false, ioDevice, r.io()) : Limit.ioNotEnforced(r.io(), no);
            }
            default -> {
                return none(r, "no cgroup hierarchy is mounted at " + ROOT);
            }
        }
        return new CgroupLimits(groups, freezer, limits, io);
    }

    /** Freezes (true) or thaws (false) every process of the workspace. Returns false where no freezer is available. */
    public boolean freeze(boolean frozen) {
        if (freezer == null) return false;
        try {
            if (freezer.toString().contains("/freezer/")) {
                Files.writeString(freezer.resolve("freezer.state"), frozen ? "FROZEN" : "THAWED");
                if (frozen) {
                    // a poll, bounded at about a second: the v1 freezer passes through FREEZING and says FROZEN only
                    // when asked (it has no event file to wait on)
                    for (int i = 0; i < 200 && !Files.readString(freezer.resolve("freezer.state")).strip().equals("FROZEN"); i++) {
                        Thread.sleep(5);
                    }
                }
            } else {
                Files.writeString(freezer.resolve("cgroup.freeze"), frozen ? "1" : "0");
            }
            return true;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** Kills every process left in the workspace's pids group (a sandbox torn down uncleanly), then removes the groups. */
    public static void killAndRemove(String workspaceId) {
        Path procs = ROOT.resolve("pids/berth").resolve(workspaceId).resolve("cgroup.procs");
        if (!Files.exists(procs)) procs = ROOT.resolve("berth").resolve(workspaceId).resolve("cgroup.procs");
        try {
            for (String pid : Files.readAllLines(procs)) {
                if (!pid.isBlank()) ProcessHandle.of(Long.parseLong(pid.strip())).ifPresent(ProcessHandle::destroyForcibly);
            }
        } catch (IOException | NumberFormatException ignored) {
            // no such group: nothing left
        }
        removeFor(workspaceId);
    }

    /**
     * Removes the groups of a workspace. A group cannot be removed while a process is in it, and processes killed a
     * moment ago may still be on their way out: whatever is left in a group (it all belongs to the closed workspace)
     * is killed and the removal retried, for up to a few seconds. A group that still cannot go is logged, and found
     * again by the next start-up's clean-up.
     */
    public static void removeFor(String workspaceId) {
        for (String c : List.of("cpu/berth", "memory/berth", "pids/berth", "blkio/berth", "freezer/berth", "berth")) {
            Path g = ROOT.resolve(c).resolve(workspaceId);
            long deadline = System.nanoTime() + 5_000_000_000L;
            while (Files.isDirectory(g)) {
                try {
                    Files.deleteIfExists(g);
                } catch (IOException busy) {
                    if (System.nanoTime() > deadline) {
                        System.getLogger("berth.host").log(System.Logger.Level.WARNING, "cgroup " + g + " still has processes; left for the next start-up");
                        break;
                    }
                    if (g.toString().contains("/freezer/")) thaw(g); // frozen processes cannot die
                    for (long pid : procs(g)) ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
                    // a poll, bounded by the deadline: v1 hierarchies give no notice when a group empties (only v2 has
                    // cgroup.events), killed processes leave within milliseconds, and the removal itself is the check
                    try {
                        Thread.sleep(5);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        return;
                    }
                }
            }
        }
    }

    private static void thaw(Path freezerGroup) {
        try {
            Files.writeString(freezerGroup.resolve("freezer.state"), "THAWED");
        } catch (IOException ignored) {
            // gone already
        }
    }

    private static List<Long> procs(Path group) {
        try {
            return Files.readAllLines(group.resolve("cgroup.procs")).stream().filter(l -> !l.isBlank()).map(Long::parseLong).toList();
        } catch (IOException | NumberFormatException e) {
            return List.of();
        }
    }

    private static boolean write(Path group, String file, String value) {
        if (!mkdirs(group)) return false;
        try {
            Files.writeString(group.resolve(file), value);
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    private static boolean mkdirs(Path group) {
        try {
            Files.createDirectories(group);
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    /** What {@link CgroupLimits#create} would give on this host, without creating anything. */
    public static List<Limit> predict(Resources r) {
        String h = CgroupLimits.hierarchy();
        if (h.equals("none")) return CgroupLimits.none(r, "no cgroup hierarchy is mounted").limits();
        Path root = Path.of("/sys/fs/cgroup");
        boolean v1 = h.equals("v1");
        java.util.function.Function<String, Boolean> ok = c -> v1 ? Files.isWritable(root.resolve(c))
                : readable(root.resolve("cgroup.subtree_control")).contains(c);
        List<Limit> out = new ArrayList<>();
        out.add(ok.apply("cpu") ? Limit.enforced("cpu", r.vcpus(), "vcpus", "cgroup " + h + " cpu quota")
                : Limit.notEnforced("cpu", r.vcpus(), "vcpus", "the cgroup " + h + " cpu controller is not available to Berth"));
        out.add(ok.apply("memory") ? Limit.enforced("memory", r.memoryMiB(), "MiB", "cgroup " + h + " memory limit")
                : Limit.notEnforced("memory", r.memoryMiB(), "MiB", "the cgroup " + h + " memory controller is not available to Berth"));
        out.add(ok.apply("pids") ? Limit.enforced("pids", r.maxPids(), "processes", "cgroup " + h + " pids.max")
                : Limit.notEnforced("pids", r.maxPids(), "processes", "the cgroup " + h + " pids controller is not available to Berth"));
        return out;
    }

    private static String readable(Path p) {
        try {
            return Files.readString(p);
        } catch (IOException e) {
            return "";
        }
    }
}
