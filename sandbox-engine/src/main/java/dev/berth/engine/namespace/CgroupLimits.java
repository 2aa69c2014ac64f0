package dev.berth.engine.namespace;

import dev.berth.engine.spi.Resources;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Memory, process-count and freezer control for a namespace workspace through cgroups, where the host lets Berth
 * use them (root, cgroup v1 controllers mounted, or cgroup v2 with the controllers enabled). Where it does not, the
 * limits are reported as not enforced rather than pretended. Thread-safe (stateless; paths per workspace).
 */
record CgroupLimits(List<Path> groups, Path freezer, String enforced) {
    private static final Path ROOT = Path.of("/sys/fs/cgroup");

    /** Creates the groups and writes the limits; returns which paths a process must join. */
    static CgroupLimits create(String workspaceId, Resources r) {
        List<Path> groups = new ArrayList<>();
        List<String> done = new ArrayList<>();
        Path freezer = null;
        if (Files.isDirectory(ROOT.resolve("memory")) && Files.isDirectory(ROOT.resolve("pids"))) {
            // cgroup v1 (or hybrid): one group per controller
            Path mem = ROOT.resolve("memory/berth").resolve(workspaceId);
            Path pids = ROOT.resolve("pids/berth").resolve(workspaceId);
            Path frz = ROOT.resolve("freezer/berth").resolve(workspaceId);
            if (write(mem, "memory.limit_in_bytes", String.valueOf((long) r.memoryMiB() << 20))) {
                groups.add(mem);
                done.add("memory " + r.memoryMiB() + " MiB");
            }
            if (write(pids, "pids.max", String.valueOf(r.maxPids()))) {
                groups.add(pids);
                done.add("pids " + r.maxPids());
            }
            if (Files.isDirectory(ROOT.resolve("freezer")) && mkdirs(frz)) {
                groups.add(frz);
                freezer = frz;
            }
        } else if (Files.exists(ROOT.resolve("cgroup.controllers"))) {
            Path g = ROOT.resolve("berth").resolve(workspaceId);
            boolean mem = write(g, "memory.max", String.valueOf((long) r.memoryMiB() << 20));
            boolean pids = write(g, "pids.max", String.valueOf(r.maxPids()));
            if (mem || pids) {
                groups.add(g);
                if (mem) done.add("memory " + r.memoryMiB() + " MiB");
                if (pids) done.add("pids " + r.maxPids());
                freezer = g;
            }
        }
        return new CgroupLimits(groups, freezer, done.isEmpty() ? "none (no writable cgroups on this host)" : String.join(", ", done));
    }

    /** Freezes (true) or thaws (false) every process of the workspace. Returns false where no freezer is available. */
    boolean freeze(boolean frozen) {
        if (freezer == null) return false;
        try {
            if (freezer.toString().contains("/freezer/")) {
                Files.writeString(freezer.resolve("freezer.state"), frozen ? "FROZEN" : "THAWED");
                if (frozen) {
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

    /**
     * Removes the groups of a workspace. A group cannot be removed while a process is in it, and processes killed a
     * moment ago may still be on their way out: whatever is left in a group (it all belongs to the closed workspace)
     * is killed and the removal retried, for up to a few seconds. A group that still cannot go is logged, and found
     * again by the next start-up's clean-up.
     */
    static void removeFor(String workspaceId) {
        for (String c : List.of("memory/berth", "pids/berth", "freezer/berth", "berth")) {
            Path g = ROOT.resolve(c).resolve(workspaceId);
            long deadline = System.nanoTime() + 5_000_000_000L;
            while (Files.isDirectory(g)) {
                try {
                    Files.deleteIfExists(g);
                } catch (IOException busy) {
                    if (System.nanoTime() > deadline) {
                        System.getLogger("berth.namespace").log(System.Logger.Level.WARNING, "cgroup " + g + " still has processes; left for the next start-up");
                        break;
                    }
                    if (g.toString().contains("/freezer/")) thaw(g); // frozen processes cannot die
                    for (long pid : procs(g)) ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
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
}
