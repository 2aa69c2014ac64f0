package dev.berth.engine.microvm;

import dev.berth.engine.host.HostCommand;
import dev.berth.engine.host.HostIdentity;
import dev.berth.engine.host.ShippedBinary;
import dev.berth.engine.spi.Limit;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * The jail one QEMU runs in, after Firecracker's jailer: its own unprivileged uid (the workspace's, as on the
 * namespace level), no capabilities and no new privileges, a private mount namespace whose root is a fresh tmpfs
 * holding only what this machine needs at the paths its command line names (its state and runtime directories
 * read-write; kernel, initramfs, base disk, backing disks and a fork's saved state as single read-only files; a
 * fork's shared RAM file, see below), a hidepid {@code /proc}, and cgroup v1 groups with cpu, memory (guest RAM plus
 * {@link #overheadMiB}) and pids limits. QEMU's own seccomp sandbox stays on inside.
 *
 * <p>The launch is one process, {@code berth-vmm-jail} ({@code src/main/c/vmm-jail}, shipped in the jar), run as root:
 * it makes a private mount namespace, builds the root, chroots, drops every privilege and execs QEMU, so the pid QEMU
 * writes to its pid file is the launched process. The caller moves that process into its cgroups while QEMU starts
 * ({@link #join}). (It replaced a shell prologue of about twenty
 * processes, one {@code mount} per bind, which made a jailed QEMU reach QMP 90-130 ms after a bare one.)
 *
 * <p>Known limit (QEMU 7.2): a fork maps its snapshot's RAM file privately but QEMU opens it read-write all the
 * same ({@code readonly=on} would make guest RAM unwritable; {@code rom=} came with 8.2). The file is therefore
 * given to a group of its own (mode 0660) that the forks' QEMUs join; a QEMU escape in a fork could write into it.
 * Stateless; thread-safe.
 */
final class VmmJail {
    static final Path CGROUP = Path.of("/sys/fs/cgroup");
    static final int MAX_TASKS = 128;
    /** Mount point of the jail's root in the runtime directory (an empty directory outside the jail). */
    static final String ROOT_DIR = ".jail-root";

    private VmmJail() {}

    /**
     * The jail's name (cgroups, uid) for the machine of {@code runtimeDir}: derived from its absolute path, which is
     * the workspace's and stable across restarts ({@code home/run/<id>}), so a later clean-up finds the same groups.
     */
    static String key(Path runtimeDir) {
        java.util.zip.CRC32C c = new java.util.zip.CRC32C();
        c.update(runtimeDir.toAbsolutePath().normalize().toString().getBytes(java.nio.charset.StandardCharsets.UTF_8));
        return runtimeDir.getFileName() + "-" + Long.toHexString(c.getValue());
    }

    /** QEMU's memory beyond guest RAM: the TCG translation cache (tb-size=256) and the device model; less with KVM. */
    static int overheadMiB(Accel accel) { return accel.kvm() ? 128 : 384; }

    /**
     * A jailed launch: the command (the launcher, then QEMU's command line) and the cgroups its process must join
     * ({@link #join}) before the guest runs.
     */
    record Launch(List<String> command, List<Path> cgroups) {}

    /**
     * The jailed form of {@code qemu} (a full QEMU command line). Prepares ownership, groups and cgroups on the way.
     *
     * @param extraReadOnly files outside the state directory QEMU reads (a fork's saved state)
     */
    static Launch wrap(List<String> qemu, Accel accel, VmSpec spec, Path specDir, Path dataDisk, Path runtimeDir,
                             List<Path> extraReadOnly) throws IOException {
        String id = key(runtimeDir);
        int uid = HostIdentity.uidFor(id);
        Path state = specDir.toAbsolutePath();
        Path runtime = runtimeDir.toAbsolutePath();
        // everything of the workspace's own becomes its uid's; its layers (shared with snapshots and other forks,
        // DiskLayers) stay root's and read-only
        chownTree(state, uid, state.resolve(DiskLayers.DIR));
        chownTree(runtime, uid, null);

        Set<Path> ro = new LinkedHashSet<>();
        ro.add(Path.of(spec.kernel()));
        ro.add(Path.of(spec.initramfs()));
        if (spec.baseDisk() != null) ro.add(Path.of(spec.baseDisk()));
        ro.addAll(DiskLayers.chain(dataDisk));
        for (Path p : extraReadOnly) ro.add(p.toAbsolutePath());
        ro.add(Path.of("/etc/ld.so.cache"));
        List<Path> rw = new ArrayList<>();
        List<Integer> groups = new ArrayList<>();
        Path mem = state.resolve(spec.memPath()).normalize();
        if (!spec.memShared()) {
            // a fork's shared RAM file (see the class comment): a layer of its own directory, hard-linked with the
            // snapshot's and its siblings' (the group is the layer's, the same for all of them), or a snapshot's file
            // by absolute path (a fork made before layers)
            boolean layer = mem.startsWith(state);
            int gid = HostIdentity.uidFor("ram:" + (layer ? mem.getFileName() : mem.getParent()));
            HostCommand.exec("chgrp", String.valueOf(gid), mem.toString());
            HostCommand.exec("chmod", "0660", mem.toString());
            groups.add(gid);
            if (!layer) rw.add(mem);
        }
        // a KVM machine opens /dev/kvm through the device's group (Accel.jailedAccess checked it is not root's)
        if (accel.kvm() && Accel.kvmGroup() >= 0) groups.add(Accel.kvmGroup());
        ro.removeIf(p -> p.startsWith(state) || p.equals(mem));

        List<Path> cgroups = cgroups(id, spec, accel);
        // the new root is a tmpfs on a directory of the runtime directory (in the private mount namespace only; the
        // runtime directory bound into the jail shows it empty, and root's: made after the chown above)
        Files.createDirectories(runtime.resolve(ROOT_DIR));
        List<String> out = new ArrayList<>(List.of(launcher(runtime).toString()));
        out.addAll(List.of("--root", runtime.resolve(ROOT_DIR).toString(), "--mkdir", "/tmp", "--usr", "--proc"));
        for (String l : List.of("bin", "lib", "lib64", "sbin")) if (Files.isSymbolicLink(Path.of("/" + l))) out.addAll(List.of("--link", l));
        // /dev/kvm only for a KVM machine: a TCG QEMU has no use for it (one mount less, and less to reach after an escape)
        for (String d : List.of("null", "zero", "random", "urandom", "kvm")) {
            if (Files.exists(Path.of("/dev", d)) && (accel.kvm() || !d.equals("kvm"))) out.addAll(List.of("--dev", d));
        }
        for (Path d : List.of(state, runtime)) out.addAll(List.of("--rw", d.toString()));
        for (Path f : rw) out.addAll(List.of("--rw", f.toString()));
        for (Path f : ro) out.addAll(List.of("--ro", f.toString()));
        out.addAll(List.of("--uid", String.valueOf(uid), "--gid", String.valueOf(uid)));
        if (!groups.isEmpty()) out.addAll(List.of("--groups", groups.stream().map(String::valueOf).collect(java.util.stream.Collectors.joining(","))));
        out.add("--");
        out.addAll(qemu);
        return new Launch(out, cgroups);
    }

    /**
     * Moves the process {@code pid} (the launcher, which becomes QEMU) into {@code cgroups}. Done by the caller while
     * QEMU starts, not by the launcher before it: under cgroup v1 every move waits for an RCU grace period (the
     * threadgroup lock), measured here at 11-27 ms on a 65-77 ms start to QMP when the launcher did it first. The
     * caller joins it before the guest runs (QEMU starts with -S or -incoming defer), so no guest instruction runs
     * outside the groups; only QEMU's own start-up is not charged to them.
     */
    static void join(long pid, List<Path> cgroups) throws IOException {
        for (Path g : cgroups) Files.writeString(g.resolve("cgroup.procs"), Long.toString(pid));
    }

    /** Classpath resource of the launcher ({@code src/main/c/vmm-jail}). */
    static final String LAUNCHER_RESOURCE = "berth/host/berth-vmm-jail";

    /**
     * The launcher, extracted beside the runtime directory (its parent is root's and not bound into any jail; the
     * runtime directory itself becomes the workspace uid's).
     */
    static Path launcher(Path runtimeDir) throws IOException {
        return ShippedBinary.extract(LAUNCHER_RESOURCE, "berth-vmm-jail", runtimeDir.toAbsolutePath().getParent().resolve(".bin"));
    }

    /**
     * {@code chown -R -h uid:uid root} without {@code skip} (a directory left with its whole tree), in-process (two
     * {@code chown}/{@code find} processes were a few ms of every start). Symbolic links are changed, not followed.
     */
    static void chownTree(Path root, int uid, Path skip) throws IOException {
        Files.walkFileTree(root, new java.nio.file.SimpleFileVisitor<>() {
            @Override
            public java.nio.file.FileVisitResult preVisitDirectory(Path dir, java.nio.file.attribute.BasicFileAttributes a) throws IOException {
                if (dir.equals(skip)) return java.nio.file.FileVisitResult.SKIP_SUBTREE;
                own(dir);
                return java.nio.file.FileVisitResult.CONTINUE;
            }

            @Override
            public java.nio.file.FileVisitResult visitFile(Path f, java.nio.file.attribute.BasicFileAttributes a) throws IOException {
                if (!f.equals(skip)) own(f);
                return java.nio.file.FileVisitResult.CONTINUE;
            }

            private void own(Path p) throws IOException {
                Files.setAttribute(p, "unix:uid", uid, java.nio.file.LinkOption.NOFOLLOW_LINKS);
                Files.setAttribute(p, "unix:gid", uid, java.nio.file.LinkOption.NOFOLLOW_LINKS);
            }
        });
    }

    private static List<Path> cgroups(String id, VmSpec spec, Accel accel) {
        List<Path> out = new ArrayList<>();
        long mem = (long) (spec.memoryMiB() + overheadMiB(accel)) << 20;
        if (write(CGROUP.resolve("cpu/berth-vmm").resolve(id), "cpu.cfs_quota_us", String.valueOf(cpuQuotaUs(spec)))) {
            out.add(CGROUP.resolve("cpu/berth-vmm").resolve(id));
        }
        if (write(CGROUP.resolve("memory/berth-vmm").resolve(id), "memory.limit_in_bytes", String.valueOf(mem))) {
            out.add(CGROUP.resolve("memory/berth-vmm").resolve(id));
        }
        if (write(CGROUP.resolve("pids/berth-vmm").resolve(id), "pids.max", String.valueOf(MAX_TASKS))) {
            out.add(CGROUP.resolve("pids/berth-vmm").resolve(id));
        }
        return out;
    }

    /**
     * The guest's vCPUs plus one core for QEMU's own threads (main loop, I/O): with a quota of exactly its vCPUs a TCG
     * QEMU was throttled every period and run("true") took 3.4x as long (IsolationBenchmark).
     */
    static long cpuQuotaUs(VmSpec spec) { return (spec.vcpus() + 1) * 100_000L; }

    /**
     * The limits as set up for the QEMU of {@code id} (read back from the cgroup files), plus disk and io;
     * {@code jailed}: whether that QEMU was launched in its jail.
     */
    static List<Limit> limits(String id, boolean jailed, VmSpec spec, int diskMiB, GuestRunLimits runs, List<Limit> io) {
        List<Limit> out = new ArrayList<>();
        String cpu = read(CGROUP.resolve("cpu/berth-vmm").resolve(id).resolve("cpu.cfs_quota_us"));
        String mem = read(CGROUP.resolve("memory/berth-vmm").resolve(id).resolve("memory.limit_in_bytes"));
        String no = jailed ? "the cgroup v1 controller is not writable here" : "QEMU runs unjailed (Berth is not root, or unsafeNoJail)";
        out.add(cpu.equals(String.valueOf(cpuQuotaUs(spec)))
                ? Limit.enforced("cpu", spec.vcpus(), "vcpus", "the guest has " + spec.vcpus() + " vCPU(s); its QEMU has a cgroup v1 cpu quota of "
                        + (spec.vcpus() + 1) + " cores (one for its own threads)")
                : Limit.notEnforced("cpu", spec.vcpus(), "vcpus", "the guest has " + spec.vcpus() + " vCPU(s), but its QEMU has no cpu quota: " + no));
        long capMiB = mem.matches("\\d{1,15}") ? Long.parseLong(mem) >> 20 : -1;
        String inGuest = runs.memoryMiB() > 0
                ? "; inside the guest, runs share a cgroup v2 memory.max of " + runs.memoryMiB() + " MiB (the agent outside it)"
                : "; no memory limit on runs inside the guest: " + (runs.problem() != null ? runs.problem() : "their group has none");
        out.add(capMiB > spec.memoryMiB() && capMiB < (1L << 30)
                ? Limit.enforced("memory", spec.memoryMiB(), "MiB", "guest RAM; its QEMU is capped at " + spec.memoryMiB() + " + "
                        + (capMiB - spec.memoryMiB()) + " MiB by cgroup v1 memory" + inGuest)
                : Limit.enforced("memory", spec.memoryMiB(), "MiB", "guest RAM (the guest cannot use more); its QEMU has no cgroup cap: " + no + inGuest));
        String host = "its QEMU is capped at " + MAX_TASKS + " host tasks" + (jailed ? "" : " only when jailed");
        out.add(runs.pidsMax() > 0
                ? Limit.enforced("pids", runs.pidsMax(), "processes", "cgroup v2 pids.max of the runs' group inside the guest (as the guest"
                        + " reports it; the agent is outside it); " + host)
                : Limit.notEnforced("pids", 0, "processes", "no pids limit inside the guest: "
                        + (runs.problem() != null ? runs.problem() : "the runs' group has none") + "; " + host));
        out.add(Limit.enforced("disk", diskMiB, "MiB", "the guest's data disk (qcow2) has this size"));
        out.addAll(io);
        return out;
    }

    static void remove(String id) {
        for (String c : List.of("cpu/berth-vmm", "memory/berth-vmm", "pids/berth-vmm", "blkio/berth-vmm")) {
            try {
                Files.deleteIfExists(CGROUP.resolve(c).resolve(id));
            } catch (IOException ignored) {
                // still has a task for a moment after a kill; removed at the next clean-up
            }
        }
    }

    private static String read(Path p) {
        try {
            return Files.readString(p).strip();
        } catch (IOException e) {
            return "";
        }
    }

    private static boolean write(Path group, String file, String value) {
        try {
            Files.createDirectories(group);
            Files.writeString(group.resolve(file), value);
            return true;
        } catch (IOException e) {
            return false;
        }
    }

}
