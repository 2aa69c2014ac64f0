package dev.berth.engine.microvm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.berth.engine.spi.Limit;
import dev.berth.engine.spi.Resources;
import dev.berth.engine.spi.Sandbox;
import dev.berth.engine.spi.StartRequest;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * A running QEMU looked at from the host: its uid, capabilities, cgroups and their limits, its mount namespace (what
 * it can open), for a fresh machine and for a fork of a snapshot. Needs root (the jail is only set up then).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class VmmJailTest {
    static final Resources SMALL = new Resources(1, 128, 64, 256);
    Path root;
    Path serverSecret;
    MicrovmDriver driver;
    Sandbox vm;
    Sandbox fork;

    StartRequest request(String id, StartRequest.Mode mode) {
        return new StartRequest(id, root.resolve(id).resolve("state"), root.resolve(id).resolve("run"), mode, SMALL, 0);
    }

    @BeforeAll
    void start() throws Exception {
        assumeTrue(MicrovmSettings.fromSystem().jailed(), "the jail needs root");
        root = Files.createTempDirectory("berth-jail-");
        Files.setPosixFilePermissions(root, java.nio.file.attribute.PosixFilePermissions.fromString("rwxr-xr-x"));
        serverSecret = Files.writeString(root.resolve("server-secret.txt"), "SERVER-SECRET");
        driver = new MicrovmDriver(TestImages.builder(), MicrovmDriver.ImageKind.TEST);
        vm = driver.start(request("ws-jail-a", new StartRequest.Fresh()));
        Path snap = root.resolve("snap-a");
        vm.snapshot(snap);
        fork = driver.start(request("ws-jail-b", new StartRequest.Fork(snap)));
    }

    @AfterAll
    void stop() {
        if (vm != null) vm.destroy();
        if (fork != null) fork.destroy();
        try {
            if (root != null) dev.berth.engine.spi.Trees.delete(root);
        } catch (java.io.IOException ignored) {
            // a temporary directory
        }
    }

    static String status(long pid, String field) throws Exception {
        return Files.readString(Path.of("/proc/" + pid + "/status")).lines().filter(l -> l.startsWith(field + ":"))
                .findFirst().orElseThrow().substring(field.length() + 1).strip();
    }

    @Test
    void qemu_runsAsItsOwnUidWithoutCapabilities() throws Exception {
        for (Sandbox s : List.of(vm, fork)) {
            long pid = s.hostPid();
            assertTrue(Files.readString(Path.of("/proc/" + pid + "/cmdline")).startsWith("qemu-system"), "pid " + pid + " is not QEMU");
            String uid = status(pid, "Uid").split("\\s+")[0];
            assertNotEquals("0", uid, "QEMU runs as root");
            assertTrue(Integer.parseInt(uid) >= dev.berth.engine.host.HostIdentity.UID_BASE, uid);
            assertEquals("0000000000000000", status(pid, "CapEff"));
            assertEquals("0000000000000000", status(pid, "CapBnd"));
            assertEquals("1", status(pid, "NoNewPrivs"));
            assertEquals("2", status(pid, "Seccomp"), "QEMU's own seccomp sandbox is still on");
        }
        assertNotEquals(status(vm.hostPid(), "Uid"), status(fork.hostPid(), "Uid"), "two workspaces share a QEMU uid");
    }

    @Test
    void qemu_isInItsCgroupsWithTheWorkspaceLimits() throws Exception {
        String key = VmmJail.key(root.resolve("ws-jail-a/run"));
        String cg = Files.readString(Path.of("/proc/" + vm.hostPid() + "/cgroup"));
        assertTrue(cg.contains(":memory:/berth-vmm/" + key), cg);
        assertTrue(cg.contains(":pids:/berth-vmm/" + key), cg);
        assertTrue(cg.contains("cpu:/berth-vmm/" + key), cg);
        long mem = Long.parseLong(Files.readString(Path.of("/sys/fs/cgroup/memory/berth-vmm/" + key + "/memory.limit_in_bytes")).strip());
        assertTrue(mem > (128L << 20) && mem <= ((128L + 512) << 20), "memory limit " + mem);
        assertEquals("200000", Files.readString(Path.of("/sys/fs/cgroup/cpu/berth-vmm/" + key + "/cpu.cfs_quota_us")).strip());
        List<Limit> limits = vm.limits();
        assertTrue(limits.stream().filter(l -> l.name().equals("memory")).findFirst().orElseThrow().how().contains("capped"), limits.toString());
        assertTrue(limits.stream().filter(l -> l.name().equals("cpu")).findFirst().orElseThrow().enforced(), limits.toString());
    }

    /**
     * With I/O limits asked, QEMU is throttled twice: by its own block throttling (what the guest sees) and, should a
     * guest escape into QEMU, by a host blkio group of its own on the disk under the workspace, read back here.
     */
    @Test
    void qemu_withIoLimits_isInAHostBlkioGroupWithThem() throws Exception {
        assumeTrue(Files.isDirectory(Path.of("/sys/fs/cgroup/blkio")), "no cgroup v1 blkio controller here");
        var io = new dev.berth.engine.spi.IoLimits(8L << 20, 4L << 20, 0, 0);
        String id = "ws-jail-io";
        Sandbox limited = driver.start(new StartRequest(id, root.resolve(id).resolve("state"), root.resolve(id).resolve("run"),
                new StartRequest.Fork(root.resolve("snap-a")), SMALL.withIo(io), 0));
        try {
            String key = VmmJail.key(root.resolve(id).resolve("run"));
            String cg = Files.readString(Path.of("/proc/" + limited.hostPid() + "/cgroup"));
            assertTrue(cg.contains(":blkio:/berth-vmm/" + key), cg);
            String device = dev.berth.engine.host.BlockIoLimits.deviceOfFile(root);
            Path group = Path.of("/sys/fs/cgroup/blkio/berth-vmm/" + key);
            assertEquals(device + " " + (8L << 20), Files.readString(group.resolve("blkio.throttle.read_bps_device")).strip());
            assertEquals(device + " " + (4L << 20), Files.readString(group.resolve("blkio.throttle.write_bps_device")).strip());
            Limit read = limited.limits().stream().filter(l -> l.name().equals("io_read_bps")).findFirst().orElseThrow();
            assertTrue(read.enforced() && read.how().contains("QEMU block throttling") && read.how().contains("blkio group"), read.toString());
        } finally {
            limited.destroy();
        }
        assertFalse(Files.exists(Path.of("/sys/fs/cgroup/blkio/berth-vmm/" + VmmJail.key(root.resolve(id).resolve("run")))),
                "the host blkio group is removed with the machine");
    }

    /** Mount points of a process's mount namespace, as the process sees them (relative to its root). */
    static List<String> mountPoints(long pid) throws Exception {
        return Files.readAllLines(Path.of("/proc/" + pid + "/mountinfo")).stream().map(l -> l.split(" ")[4]).toList();
    }

    @Test
    void qemu_seesOnlyItsOwnFiles() throws Exception {
        List<String> a = mountPoints(vm.hostPid());
        String own = root.resolve("ws-jail-a/state").toString();
        assertTrue(a.contains(own), "its own state directory is not in its jail: " + a);
        for (String m : a) {
            assertFalse(m.startsWith(root.resolve("ws-jail-b").toString()), "another workspace is in its jail: " + m);
            assertFalse(m.startsWith(serverSecret.toString()) || m.equals(root.toString()), "the server's files are in its jail: " + m);
            assertFalse(m.startsWith("/root") && !m.contains("/berth/images/"), "the server's home is in its jail: " + m);
            assertFalse(m.startsWith("/etc/") && !m.equals("/etc/ld.so.cache"), "host configuration is in its jail: " + m);
            // the image cache (kernel, initramfs, the warm base snapshot's disk and RAM) is there as single files only
            boolean image = m.contains("/berth-images/") || m.contains("/berth/images/");
            assertFalse(!image && (m.startsWith("/home") || m.startsWith("/work")), "host directories are in its jail: " + m);
            if (image) assertTrue(Files.isRegularFile(Path.of(m)), "a whole image directory is in its jail: " + m);
        }
        // the fork's disk is backed by its snapshot's layers, hard links in its own state directory: nothing of the
        // snapshot's or its origin's directories is in its jail, and those layers stay root's and read-only
        List<String> b = mountPoints(fork.hostPid());
        assertTrue(b.contains(root.resolve("ws-jail-b/state").toString()), b.toString());
        for (String m : b) assertFalse(m.startsWith(root.resolve("snap-a").toString()), "the snapshot is in the fork's jail: " + b);
        assertFalse(b.contains(own), "the fork sees its origin's state directory: " + b);
        try (var layers = Files.list(root.resolve("ws-jail-b/state/layers"))) {
            for (Path l : layers.filter(p -> p.toString().endsWith(".qcow2")).toList()) {
                assertEquals(0, Files.getAttribute(l, "unix:uid"), l.toString());
                assertEquals("r--r--r--", java.nio.file.attribute.PosixFilePermissions.toString(Files.getPosixFilePermissions(l)), l.toString());
            }
        }
    }

    /** Per-mount options ({@code ro,nosuid,...}) by mount point, as the process sees them. */
    static java.util.Map<String, List<String>> mountOptions(long pid) throws Exception {
        java.util.Map<String, List<String>> out = new java.util.LinkedHashMap<>();
        for (String l : Files.readAllLines(Path.of("/proc/" + pid + "/mountinfo"))) {
            String[] f = l.split(" ");
            out.put(f[4], List.of(f[5].split(",")));
        }
        return out;
    }

    @Test
    void qemu_mountsAreNosuidAndWhatItSharesIsReadOnly() throws Exception {
        var m = mountOptions(vm.hostPid());
        for (var e : m.entrySet()) {
            if (e.getKey().startsWith("/usr/")) continue; // /usr's own submounts come as the host has them
            assertTrue(e.getValue().contains("nosuid"), "a setuid file would work at " + e.getKey() + ": " + e.getValue());
        }
        assertTrue(m.get("/usr").contains("ro") && m.get("/usr").contains("nodev"), "/usr " + m.get("/usr"));
        String own = root.resolve("ws-jail-a/state").toString();
        assertTrue(m.get(own).containsAll(List.of("rw", "nodev", "noexec")), own + " " + m.get(own));
        assertTrue(m.get("/proc").contains("noexec"), m.toString());
        long images = m.entrySet().stream().filter(e -> e.getKey().contains("images/")).peek(e ->
                assertTrue(e.getValue().containsAll(List.of("ro", "nodev", "noexec")), e.getKey() + " " + e.getValue())).count();
        assertTrue(images >= 2, "kernel and initramfs are bound in: " + m.keySet());
    }

    /** The launcher refuses what would leave QEMU with privileges or outside its root, before QEMU runs. */
    @Test
    void launcher_refusesBadInvocations() throws Exception {
        Path launcher = VmmJail.launcher(root.resolve("ws-jail-a/run"));
        Path rootDir = Files.createDirectories(root.resolve("bad-root"));
        List<List<String>> bad = List.of(
                List.of("--root", rootDir.toString(), "--uid", "0", "--gid", "70000", "--", "true"),
                List.of("--root", rootDir.toString(), "--uid", "70000", "--", "true"),
                List.of("--root", "relative", "--uid", "70000", "--gid", "70000", "--", "true"),
                List.of("--root", rootDir.toString(), "--ro", "/etc/../etc/shadow", "--uid", "70000", "--gid", "70000", "--", "true"),
                List.of("--root", rootDir.toString(), "--link", "../x", "--uid", "70000", "--gid", "70000", "--", "true"),
                List.of("--root", rootDir.toString(), "--uid", "70000", "--gid", "70000"),
                List.of("--root", rootDir.toString(), "--ro", "/no/such/file", "--uid", "70000", "--gid", "70000", "--", "true"));
        for (List<String> args : bad) {
            List<String> cmd = new java.util.ArrayList<>(List.of(launcher.toString()));
            cmd.addAll(args);
            Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes());
            assertEquals(125, p.waitFor(), args + ": " + out);
            assertTrue(out.startsWith("berth-vmm-jail: "), args + ": " + out);
        }
    }

    @Test
    void jailedMachines_parkResumeAndRun() throws Exception {
        assertEquals(0, Guest.sh(fork.agent(), "echo hi > /tmp/x").exit().exitCode());
        Sandbox.ParkOutcome out = fork.park();
        assertTrue(out.memoryKept(), out.toString());
        fork = driver.start(request("ws-jail-b", new StartRequest.Resume()));
        assertEquals("hi\n", Guest.sh(fork.agent(), "cat /tmp/x").out());
        assertNotEquals("0", status(fork.hostPid(), "Uid").split("\\s+")[0]);
    }
}
