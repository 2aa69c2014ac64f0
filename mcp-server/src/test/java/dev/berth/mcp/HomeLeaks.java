package dev.berth.mcp;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

/**
 * What a stopped server left behind under a test's home: mounts, loop devices backed by a file there, cgroups of its
 * workspaces and processes still using it. The end-to-end base classes call {@link #assertNone} after the server
 * stopped and before they delete the home, so a leak fails the class that made it, by name, instead of surfacing as
 * a clean-up error ("Device or resource busy") somewhere later. It reports; it never unmounts or kills. Stateless.
 */
final class HomeLeaks {
    /**
     * Processes killed a moment ago may still be on their way out (reaped by the kernel), and a loop device set to
     * clear itself goes only when the last of them has let its mount go: how long the census settles. 5 s was too
     * short with two end-to-end classes running at once (a pool's loop device was seen attached at 5 s and reused by
     * another test later); a leak that lasts is still named, 30 s later.
     */
    private static final long SETTLE_MILLIS = 30_000;

    private HomeLeaks() {}

    /** Fails, naming every leak, when something of the stopped server on {@code home} is still there. */
    static void assertNone(Path home) {
        if (home == null || !Files.exists(home)) return;
        List<String> found = find(home);
        long deadline = System.currentTimeMillis() + SETTLE_MILLIS;
        while (!found.isEmpty() && System.currentTimeMillis() < deadline) {
            try {
                Thread.sleep(100);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
            found = find(home);
        }
        if (!found.isEmpty()) {
            throw new AssertionError("the server stopped but left behind under " + home + ":\n  " + String.join("\n  ", found)
                    + "\n(the home is kept for inspection; the leak is the product's, not the test's)");
        }
    }

    /** Everything {@link #assertNone} looks for, one line each; empty when nothing is left. */
    static List<String> find(Path home) {
        String h = real(home);
        List<String> out = new ArrayList<>();
        for (String m : mountPoints()) if (under(m, h)) out.add("mount " + m);
        out.addAll(loopDevices(h));
        out.addAll(cgroups(workspaceIds(home)));
        out.addAll(processes(h));
        return out;
    }

    private static List<String> mountPoints() {
        List<String> out = new ArrayList<>();
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/mountinfo"))) {
                String[] f = line.split(" ");
                if (f.length > 4) out.add(f[4].replace("\\040", " "));
            }
        } catch (IOException ignored) {
            // no mount table: nothing to report
        }
        return out;
    }

    private static List<String> loopDevices(String home) {
        List<String> out = new ArrayList<>();
        try (var devs = Files.list(Path.of("/sys/block"))) {
            for (Path d : devs.filter(p -> p.getFileName().toString().startsWith("loop")).toList()) {
                Path backing = d.resolve("loop/backing_file");
                if (!Files.isReadable(backing)) continue;
                String file = Files.readString(backing).strip();
                if (under(file.replace(" (deleted)", ""), home)) out.add("loop device /dev/" + d.getFileName() + " on " + file);
            }
        } catch (IOException ignored) {
            // no loop devices
        }
        return out;
    }

    /**
     * The ids of the workspaces the home knows: their folders, their runtime folders; also in homes one or two levels
     * down (a test's folder that holds the server's home).
     */
    private static Set<String> workspaceIds(Path home) {
        Set<String> ids = new TreeSet<>();
        try (var s = Files.find(home, 4, (p, a) -> a.isDirectory() && p.getFileName().toString().startsWith("ws-")
                && p.getParent() != null && Set.of("workspaces", "run").contains(p.getParent().getFileName().toString()))) {
            s.forEach(p -> ids.add(p.getFileName().toString()));
        } catch (IOException | java.io.UncheckedIOException ignored) {
            // a folder went away or is not ours to read
        }
        return ids;
    }

    private static List<String> cgroups(Set<String> ids) {
        List<String> out = new ArrayList<>();
        Path root = Path.of("/sys/fs/cgroup");
        for (String id : ids) {
            for (String c : new String[] {"berth", "cpu/berth", "memory/berth", "pids/berth", "blkio/berth", "freezer/berth"}) {
                Path g = root.resolve(c).resolve(id);
                if (Files.isDirectory(g)) out.add("cgroup " + g);
            }
        }
        return out;
    }

    /** Processes (other than this JVM) whose working directory, root, executable, an open file or command line is in the home. */
    private static List<String> processes(String home) {
        List<String> out = new ArrayList<>();
        long self = ProcessHandle.current().pid();
        try (var procs = Files.list(Path.of("/proc"))) {
            for (Path p : procs.filter(d -> d.getFileName().toString().chars().allMatch(Character::isDigit)).toList()) {
                if (Long.parseLong(p.getFileName().toString()) == self) continue;
                String how = uses(p, home);
                if (how != null) out.add("process " + p.getFileName() + " (" + read(p.resolve("comm")) + ", " + how + ")");
            }
        } catch (IOException ignored) {
            // no /proc
        }
        return out;
    }

    private static String uses(Path proc, String home) {
        for (String link : new String[] {"cwd", "root", "exe"}) {
            if (under(link(proc.resolve(link)), home)) return link + " in the home";
        }
        try (var fds = Files.list(proc.resolve("fd"))) {
            for (Path fd : fds.toList()) if (under(link(fd), home)) return "open file " + link(fd);
        } catch (IOException | RuntimeException ignored) {
            // ended, or not ours to read
        }
        String cmd = read(proc.resolve("cmdline")).replace('\0', ' ');
        return cmd.contains(home + "/") || cmd.endsWith(home) || cmd.contains(home + " ") ? "command line " + abbreviate(cmd) : null;
    }

    private static String abbreviate(String s) {
        return s.length() > 200 ? s.substring(0, 200) + "..." : s.strip();
    }

    private static boolean under(String path, String home) {
        return path != null && (path.equals(home) || path.startsWith(home + "/"));
    }

    private static String link(Path p) {
        try {
            return Files.readSymbolicLink(p).toString();
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    private static String read(Path p) {
        try {
            return new String(Files.readAllBytes(p), java.nio.charset.StandardCharsets.UTF_8).strip();
        } catch (IOException e) {
            return "";
        }
    }

    private static String real(Path p) {
        try {
            return p.toRealPath().toString();
        } catch (IOException e) {
            return p.toAbsolutePath().normalize().toString();
        }
    }
}
