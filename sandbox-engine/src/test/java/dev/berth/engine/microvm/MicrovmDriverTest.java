package dev.berth.engine.microvm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.berth.engine.Await;
import dev.berth.engine.agent.Tunnel;
import dev.berth.engine.spi.Availability;
import dev.berth.engine.spi.DriverCapabilities;
import dev.berth.engine.spi.Resources;
import dev.berth.engine.spi.Sandbox;
import dev.berth.engine.spi.SandboxException;
import dev.berth.engine.spi.StartRequest;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The microvm driver end to end under TCG with the test image and the real guest agent. One workspace is booted
 * once and shared by the read-only cases; park/resume, snapshot/fork and teardown use their own workspaces.
 */
class MicrovmDriverTest {

    static final Resources SMALL = new Resources(1, 160, 128, 1024);
    @TempDir static Path root;
    static MicrovmDriver driver;
    static Sandbox shared;
    static final List<Sandbox> all = new ArrayList<>();

    static StartRequest request(String id, StartRequest.Mode mode) { return request(id, mode, 0); }

    static StartRequest request(String id, StartRequest.Mode mode, int proxyPort) {
        return new StartRequest(id, root.resolve(id).resolve("state"), root.resolve(id).resolve("run"), mode, SMALL, proxyPort);
    }

    static Sandbox start(String id, StartRequest.Mode mode) throws SandboxException { return start(id, mode, 0); }

    static Sandbox start(String id, StartRequest.Mode mode, int proxyPort) throws SandboxException {
        Sandbox s = driver.start(request(id, mode, proxyPort));
        synchronized (all) { all.add(s); }
        return s;
    }

    @BeforeAll
    static void bootShared() throws Exception {
        driver = new MicrovmDriver(TestImages.builder(), MicrovmDriver.ImageKind.TEST);
        shared = start("ws-shared", new StartRequest.Fresh(), 3128);
    }

    @AfterAll
    static void tearDown() {
        synchronized (all) { all.forEach(Sandbox::destroy); }
    }

    @Test
    void probe_onThisMachine_isAvailableAndSaysWhichAccelerator() {
        Availability a = driver.probe();
        assertTrue(a.available(), a.reason());
        DriverCapabilities c = driver.capabilities();
        assertEquals("microvm", c.isolation());
        assertTrue(c.ownKernel() && c.parkKeepsMemory() && c.snapshotKeepsMemory());
        assertTrue(List.of("kvm", "tcg").contains(c.accelerator()));
        assertTrue(a.reason().contains(c.accelerator()), a.reason());
    }

    @Test
    void probe_withoutQemu_saysWhy() {
        String old = System.getProperty("berth.microvm.qemu");
        System.setProperty("berth.microvm.qemu", "/nonexistent/qemu-system-x86_64");
        try {
            Availability a = new MicrovmDriver(TestImages.builder(), MicrovmDriver.ImageKind.TEST).probe();
            assertFalse(a.available());
            assertTrue(a.reason().contains("QEMU not found"), a.reason());
        } finally {
            if (old == null) System.clearProperty("berth.microvm.qemu"); else System.setProperty("berth.microvm.qemu", old);
        }
    }

    @Test
    void exec_simpleCommand_returnsOutputAndExitCode() throws Exception {
        Guest.Result r = Guest.sh(shared.agent(), "echo hello; echo oops >&2; exit 3");
        assertEquals("hello\n", r.out());
        assertEquals("oops\n", r.err());
        assertEquals(3, r.code());
        assertTrue(shared.isAlive());
        assertTrue(shared.hostPid() > 0);
    }

    /**
     * Root adds a user and becomes it (issue 32): the guest's /etc is its own and writable. The test image is busybox
     * without adduser (the host's busybox-static has none), so the user is added the way useradd does it, in the
     * account files; su is busybox's.
     */
    @Test
    void rootAddsAUser_andSuRunsAsIt() throws Exception {
        Guest.Result r = Guest.sh(shared.agent(), "grep -q '^bob:' /etc/passwd || { echo 'bob:x:1000:1000::/home/bob:/bin/sh' >> /etc/passwd"
                + " && echo 'bob:x:1000:' >> /etc/group; } && mkdir -p /home/bob && chown bob:bob /home/bob"
                + " && su bob -c 'id -un; id -u; touch /home/bob/mine' && stat -c %U:%G /home/bob/mine");
        assertEquals("bob\n1000\nbob:bob\n", r.out(), r.err());
        assertEquals(0, r.code(), r.err());
    }

    @Test
    void flushInBackground_writesTheGuestsDirtyPagesAndTheRamFileOut_atMostOncePerInterval() throws Exception {
        Guest.sh(shared.agent(), "dd if=/dev/urandom of=/tmp/dirty bs=1M count=8 2>/dev/null; rm /tmp/dirty");
        // of 16 MiB written the small test VM's kernel keeps about 4 MiB dirty (its background threshold): it writes
        // those back on its own only after 30 s
        long before = Long.parseLong(Guest.sh(shared.agent(), "dd if=/dev/urandom of=/workspace/kept bs=1M count=16 2>/dev/null;"
                + " awk '/^Dirty:/ {print $2}' /proc/meminfo").out().strip());
        assertTrue(before >= 2048, "the guest wrote its 16 MiB back before the test could look (" + before + " KiB dirty)");
        var writeOut = shared.flushInBackground();
        writeOut.get(60, java.util.concurrent.TimeUnit.SECONDS);
        assertTrue(shared.isAlive());
        // the write-out had the guest sync first: its page cache holds (almost) nothing dirty any more
        long dirtyKiB = Long.parseLong(Guest.sh(shared.agent(), "awk '/^Dirty:/ {print $2}' /proc/meminfo").out().strip());
        assertTrue(dirtyKiB < 1024, "guest still holds " + dirtyKiB + " KiB dirty after the write-out");
        Guest.sh(shared.agent(), "rm /workspace/kept");
        // another run's end within the interval joins the last write-out instead of starting one more
        assertSame(writeOut, shared.flushInBackground());
        assertEquals("ok\n", Guest.sh(shared.agent(), "echo ok").out());
    }

    @Test
    void exec_concurrentRuns_allCompleteWithTheirOwnOutput() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(6);
        try {
            List<Future<Guest.Result>> fs = new ArrayList<>();
            for (int i = 0; i < 6; i++) {
                int n = i;
                fs.add(pool.submit(() -> Guest.sh(shared.agent(), "sleep 0.3; echo run-" + n)));
            }
            for (int i = 0; i < 6; i++) assertEquals("run-" + i + "\n", fs.get(i).get().out());
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void exec_timeout_killsTheWholeProcessTreeInTheGuest() throws Exception {
        Guest.Result r = Guest.run(shared.agent(), 1500, "/bin/sh", "-c", "sleep 1001 & (sleep 1002 &) ; sleep 1003");
        assertTrue(r.exit().timedOut(), r.toString());
        Guest.Result ps = Guest.sh(shared.agent(), "ps -o args | grep -c '^sleep 100[123]' || true");
        assertEquals("0", ps.out().strip(), "no sleep of the timed-out run survives");
    }

    @Test
    void escape_hostFilesAreNotVisible() throws Exception {
        Path marker = Files.createTempFile("berth-host-secret", ".txt");
        try {
            Guest.Result r = Guest.sh(shared.agent(), "cat " + marker + " 2>&1; ls /work 2>&1; ls /sys/block");
            assertTrue(r.out().contains("No such file"), r.out());
            assertFalse(r.out().contains("wt-microvm"), r.out());
            assertEquals("vda", r.out().strip().lines().toList().getLast(), "only its own disk: " + r.out());
        } finally {
            Files.deleteIfExists(marker);
        }
    }

    @Test
    void escape_hostProcessesAreNotVisible() throws Exception {
        Guest.Result r = Guest.sh(shared.agent(), "ps -o pid,args");
        assertFalse(r.out().contains("java"), r.out());
        assertFalse(r.out().contains("qemu"), r.out());
        // a confined run sees its own pid namespace: its init as pid 1, then itself; not even the agent
        assertTrue(r.out().lines().anyMatch(l -> l.strip().startsWith("1 ") && l.contains("berth-run-init")), r.out());
        assertFalse(r.out().contains("berth-agent"), r.out());
        assertTrue(r.out().lines().skip(1).count() <= 3, "only this run: " + r.out());
    }

    @Test
    void escape_noNetworkDeviceOnlyLoopback() throws Exception {
        assertEquals("lo", Guest.sh(shared.agent(), "ls /sys/class/net").out().strip());
    }

    @Test
    void escape_hostLoopbackServiceIsUnreachable() throws Exception {
        try (ServerSocket host = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            CompletableFuture<Boolean> accepted = CompletableFuture.supplyAsync(() -> {
                try (var s = host.accept()) { return true; } catch (Exception e) { return false; }
            });
            int port = host.getLocalPort();
            Guest.Result r = Guest.sh(shared.agent(),
                    "for h in 127.0.0.1 192.0.2.1 198.51.100.1; do echo probe | nc -w 2 $h " + port + " && echo CONNECTED $h; done; true");
            assertFalse(r.out().contains("CONNECTED"), r.out() + r.err());
            // a negative has no condition to await: a connection the probes made is given 200 ms more to arrive
            Thread.sleep(200);
            assertFalse(accepted.isDone(), "the host listener saw no connection");
        }
    }

    @Test
    void egress_guestConnectsToProxyPort_bytesReachTheHostTunnelHandler() throws Exception {
        java.util.concurrent.BlockingQueue<Integer> ports = new java.util.concurrent.LinkedBlockingQueue<>();
        shared.agent().setTunnelHandler(tunnel -> {
            ports.add(tunnel.port());
            return new Tunnel.Sink() {
                @Override public void onData(ByteBuffer data) {
                    ByteBuffer copy = ByteBuffer.allocate(data.remaining());
                    copy.put(data).flip();
                    tunnel.write(copy);
                }
                @Override public void onClose() { tunnel.shutdownOutput(); }
                @Override public void onReset(String reason) { }
            };
        });
        Guest.Result r = Guest.sh(shared.agent(), "echo through-the-agent | nc -w 3 127.0.0.1 3128");
        assertEquals("through-the-agent\n", r.out(), r.err());
        assertEquals(3128, ports.poll(5, java.util.concurrent.TimeUnit.SECONDS));
    }

    @Test
    void resume_afterQemuCrash_bootsColdOnTheWorkspaceDisk() throws Exception {
        Sandbox ws = start("ws-crashy", new StartRequest.Fresh());
        Guest.sh(ws.agent(), "echo kept > /workspace/f; echo lost > /tmp/f; sync");
        driver.cleanupRuntime(request("ws-crashy", new StartRequest.Resume()).runtimeDir());
        assertFalse(ws.isAlive());
        Sandbox back = start("ws-crashy", new StartRequest.Resume());
        assertEquals("kept\n", Guest.sh(back.agent(), "cat /workspace/f").out());
        assertEquals("", Guest.sh(back.agent(), "cat /tmp/f 2>/dev/null; true").out());
        back.destroy();
    }

    @Test
    void start_twoWorkspacesConcurrently_bothRunIsolatedFromEachOther() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            Future<Sandbox> a = pool.submit(() -> start("ws-par-a", new StartRequest.Fresh()));
            Future<Sandbox> b = pool.submit(() -> start("ws-par-b", new StartRequest.Fresh()));
            Sandbox sa = a.get();
            Sandbox sb = b.get();
            Guest.sh(sa.agent(), "echo a > /workspace/who; echo a > /tmp/who");
            assertEquals("", Guest.sh(sb.agent(), "cat /workspace/who /tmp/who 2>/dev/null; true").out());
            assertNotEquals(sa.hostPid(), sb.hostPid());
            sa.destroy();
            assertTrue(sb.isAlive());
            assertEquals("0\n", Guest.sh(sb.agent(), "true; echo $?").out());
            sb.destroy();
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void start_withTooLittleMemory_isRefusedWithAReason() {
        StartRequest r = new StartRequest("ws-tiny", root.resolve("ws-tiny/state"), root.resolve("ws-tiny/run"),
                new StartRequest.Fresh(), new Resources(1, 64, 128, 1024), 0);
        SandboxException e = assertThrows(SandboxException.class, () -> driver.start(r));
        assertTrue(e.getMessage().contains("minimum"), e.getMessage());
    }

    /** The background loop's count, or -1 before its first write. */
    private static long counter(Sandbox s) throws Exception {
        String out = Guest.sh(s.agent(), "cat /tmp/counter 2>/dev/null; true").out().strip();
        return out.isEmpty() ? -1 : Long.parseLong(out);
    }

    @Test
    void parkThenResume_keepsMemoryProcessesAndFiles() throws Exception {
        Sandbox ws = start("ws-park", new StartRequest.Fresh());
        Guest.sh(ws.agent(), "echo in-tmpfs > /tmp/t; echo on-disk > /workspace/d");
        // a run of its own, which outlives the park (nothing backgrounded with & outlives its run)
        // the counter is replaced with rename, so a read never sees it half written (a park can stop the guest anywhere)
        Guest.start(ws.agent(), "i=0; while true; do i=$((i+1)); echo $i > /tmp/counter.new; mv /tmp/counter.new /tmp/counter; sleep 0.1; done");
        Await.until("the background loop has counted", () -> counter(ws) > 0);
        long hostPid = ws.hostPid();
        Sandbox.ParkOutcome p = ws.park();
        assertTrue(p.memoryKept());
        assertTrue(p.stateBytes() > 0);
        assertFalse(ws.isAlive());
        // park returns once the state is durable and QEMU was told to quit; a start of these files waits for its exit
        driver.awaitExit(request("ws-park", new StartRequest.Resume()).stateDir());
        assertFalse(ProcessHandle.of(hostPid).map(ProcessHandle::isAlive).orElse(false), "QEMU is gone while parked");
        assertFalse(Files.exists(request("ws-park", new StartRequest.Resume()).runtimeDir().resolve("qmp.sock")));

        Path parkedSnap = root.resolve("snap-parked");
        driver.snapshotParked(request("ws-park", new StartRequest.Resume()).stateDir(), parkedSnap);

        // Resume through a new driver instance, as after a server restart.
        Sandbox back = new MicrovmDriver(TestImages.builder(), MicrovmDriver.ImageKind.TEST)
                .start(request("ws-park", new StartRequest.Resume()));
        synchronized (all) { all.add(back); }
        assertEquals("in-tmpfs\n", Guest.sh(back.agent(), "cat /tmp/t").out());
        assertEquals("on-disk\n", Guest.sh(back.agent(), "cat /workspace/d").out());
        long a = counter(back);
        assertTrue(a > 0, "the counter survived the park: " + a);
        Await.until("the background loop started before park still runs (it was at " + a + ")", () -> counter(back) > a);
        long guestNow = Long.parseLong(Guest.sh(back.agent(), "date +%s").out().strip());
        assertTrue(Math.abs(guestNow - System.currentTimeMillis() / 1000) < 5, "clock set after restore");
        back.destroy();

        // The snapshot taken while parked forks into a machine with the same memory.
        Sandbox fork = start("ws-park-fork", new StartRequest.Fork(parkedSnap));
        assertEquals("in-tmpfs\n", Guest.sh(fork.agent(), "cat /tmp/t").out());
        long c = counter(fork);
        assertTrue(c > 0, "the fork has the parked counter: " + c);
        Await.until("the fork's copy of the loop runs (it was at " + c + ")", () -> counter(fork) > c);
        fork.destroy();
    }

    @Test
    void snapshotChangeFork_bothForksSeeTheSnapshotAndDifferInRandomness() throws Exception {
        Sandbox ws = start("ws-origin", new StartRequest.Fresh());
        Guest.sh(ws.agent(), "echo snap > /tmp/m; echo snap > /workspace/m; sync");
        Path snap = root.resolve("snap-1");
        Sandbox.ParkOutcome so = ws.snapshot(snap);
        assertTrue(so.memoryKept());
        Guest.sh(ws.agent(), "echo changed > /tmp/m; echo changed > /workspace/m; sync");

        Sandbox f1 = start("ws-fork-1", new StartRequest.Fork(snap));
        Sandbox f2 = start("ws-fork-2", new StartRequest.Fork(snap));
        for (Sandbox f : List.of(f1, f2)) {
            assertEquals("snap\nsnap\n", Guest.sh(f.agent(), "cat /tmp/m /workspace/m").out());
        }
        String r1 = Guest.sh(f1.agent(), "head -c 32 /dev/urandom | od -An -tx1").out();
        String r2 = Guest.sh(f2.agent(), "head -c 32 /dev/urandom | od -An -tx1").out();
        assertNotEquals(r1, r2, "forks must not share RNG output");
        // Forks write to their own layers; the origin and the snapshot are untouched.
        Guest.sh(f1.agent(), "echo fork1 > /workspace/m; sync");
        assertEquals("snap\n", Guest.sh(f2.agent(), "cat /workspace/m").out());
        assertEquals("changed\nchanged\n", Guest.sh(ws.agent(), "cat /tmp/m /workspace/m").out());
        // A fork parks and resumes like any workspace.
        f2.park();
        Sandbox f2b = start("ws-fork-2", new StartRequest.Resume());
        assertEquals("snap\nsnap\n", Guest.sh(f2b.agent(), "cat /tmp/m /workspace/m").out());
        for (Sandbox s : List.of(ws, f1, f2b)) s.destroy();
    }

    @Test
    void snapshot_intoAFullFileSystem_failsWithTheReason_machineRunsOn_nextSnapshotWorks() throws Exception {
        org.junit.jupiter.api.Assumptions.assumeTrue("root".equals(System.getProperty("user.name")), "mounting a tmpfs needs root");
        Sandbox ws = start("ws-full-snap", new StartRequest.Fresh());
        // RAM the copy cannot skip (random bytes are not sparse), more than the 8 MiB file system holds
        Guest.sh(ws.agent(), "head -c 24m /dev/urandom > /tmp/big; echo before > /workspace/m; sync");
        Path full = Files.createDirectories(root.resolve("full-fs"));
        assertEquals(0, new ProcessBuilder("mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", full.toString()).inheritIO().start().waitFor());
        try {
            var e = assertThrows(dev.berth.engine.spi.SandboxException.class, () -> ws.snapshot(full.resolve("snap")));
            assertTrue(e.getMessage().contains("snapshot failed"), e.getMessage());
            // the guest was continued: it runs, with its memory and its disk, and writes on
            assertEquals("before\n", Guest.sh(ws.agent(), "cat /workspace/m").out());
            assertEquals(25165824L, Long.parseLong(Guest.sh(ws.agent(), "wc -c < /tmp/big").out().strip()));
            Guest.sh(ws.agent(), "echo after > /workspace/m; sync");
        } finally {
            new ProcessBuilder("umount", "-l", full.toString()).inheritIO().start().waitFor();
        }
        Path snap = root.resolve("snap-after-full");
        assertTrue(ws.snapshot(snap).memoryKept());
        Sandbox fork = start("ws-full-snap-fork", new StartRequest.Fork(snap));
        assertEquals("after\n", Guest.sh(fork.agent(), "cat /workspace/m").out());
        assertEquals(25165824L, Long.parseLong(Guest.sh(fork.agent(), "wc -c < /tmp/big").out().strip()));
        fork.destroy();
        ws.destroy();
    }

    @Test
    void destroyAndCleanup_leaveNoProcessSocketOrFile() throws Exception {
        Sandbox ws = start("ws-gone", new StartRequest.Fresh());
        StartRequest req = request("ws-gone", new StartRequest.Resume());
        long pid = ws.hostPid();
        ws.destroy();
        ws.destroy();
        assertFalse(ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false));
        try (var s = Files.list(req.runtimeDir())) { assertEquals(List.of(), s.toList()); }

        // A crashed server: QEMU still runs, nothing but its runtime directory is known.
        Sandbox crashed = start("ws-crash", new StartRequest.Fresh());
        StartRequest creq = request("ws-crash", new StartRequest.Resume());
        long cpid = crashed.hostPid();
        driver.cleanupRuntime(creq.runtimeDir());
        assertFalse(ProcessHandle.of(cpid).map(ProcessHandle::isAlive).orElse(false), "cleanupRuntime killed our QEMU");
        try (var s = Files.list(creq.runtimeDir())) { assertEquals(List.of(), s.toList()); }

        // A pid file naming some other process is not trusted.
        Process other = new ProcessBuilder("sleep", "30").start();
        try {
            Files.writeString(creq.runtimeDir().resolve("qemu.pid"), Long.toString(other.pid()));
            driver.cleanupRuntime(creq.runtimeDir());
            assertTrue(other.isAlive(), "a process that is not this runtime's QEMU is left alone");
        } finally {
            other.destroyForcibly();
        }
        // Once the engine deletes the state directories, nothing of either workspace is left.
        ImageBuilder.deleteTree(root.resolve("ws-gone"));
        ImageBuilder.deleteTree(root.resolve("ws-crash"));
        assertFalse(Files.exists(root.resolve("ws-gone")) || Files.exists(root.resolve("ws-crash")));
    }

    /**
     * Resume loads exactly what park wrote or nothing: a changed disk byte, a RAM file of another length, a missing
     * state file are each refused by name, before QEMU sees them; put back as park left them, the workspace resumes
     * with its memory.
     */
    @Test
    void resume_savedStateNotAsParked_refusedNamingTheFile() throws Exception {
        Path dir = parkedWith("ws-verify", "remembered");

        Path disk = dir.resolve("data.qcow2");
        long at = Files.size(disk) / 2;
        try (var ch = java.nio.channels.FileChannel.open(disk, java.nio.file.StandardOpenOption.READ, java.nio.file.StandardOpenOption.WRITE)) {
            java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(1);
            ch.read(b, at);
            byte orig = b.get(0);
            ch.write(java.nio.ByteBuffer.wrap(new byte[] {(byte) (orig ^ 0x5a)}), at);
            var e = assertThrows(dev.berth.engine.spi.SandboxDamagedException.class, () -> driver.start(request("ws-verify", new StartRequest.Resume())));
            assertTrue(e.getMessage().contains("data.qcow2 has changed since park"), e.getMessage());
            ch.write(java.nio.ByteBuffer.wrap(new byte[] {orig}), at);
        }

        Path ram = dir.resolve("ram");
        long size = Files.size(ram);
        try (var ch = java.nio.channels.FileChannel.open(ram, java.nio.file.StandardOpenOption.WRITE)) {
            ch.write(java.nio.ByteBuffer.wrap(new byte[] {1}), size);
            var e = assertThrows(dev.berth.engine.spi.SandboxDamagedException.class, () -> driver.start(request("ws-verify", new StartRequest.Resume())));
            assertTrue(e.getMessage().contains("ram is " + (size + 1) + " bytes, park wrote " + size), e.getMessage());
            ch.truncate(size);
        }

        Files.move(dir.resolve("state"), dir.resolve("state.aside"));
        var e = assertThrows(dev.berth.engine.spi.SandboxDamagedException.class, () -> driver.start(request("ws-verify", new StartRequest.Resume())));
        assertTrue(e.getMessage().contains("state is missing"), e.getMessage());
        Files.move(dir.resolve("state.aside"), dir.resolve("state"));

        Sandbox back = start("ws-verify", new StartRequest.Resume());
        assertEquals("remembered\n", Guest.sh(back.agent(), "cat /tmp/t").out(), "nothing was half-resumed on the way");
        back.destroy();
    }

    /**
     * A server killed between park's commit and its digests of the RAM file and the disk leaves those entries pending
     * (size and inode): the next start resumes the workspace with its memory, and still refuses another file put in
     * the RAM file's place.
     */
    @Test
    void resume_manifestLeftPendingByACrash_resumesWithMemory() throws Exception {
        Path dir = parkedWith("ws-pending", "kept");
        ParkManifestTest.commitPending(dir, "ws-pending", List.of(QemuMachine.DATA_DISK, "ram"));

        Path ram = dir.resolve("ram");
        Files.copy(ram, dir.resolve("ram.copy"));
        Files.move(ram, dir.resolve("ram.orig"));
        Files.move(dir.resolve("ram.copy"), ram);
        var e = assertThrows(dev.berth.engine.spi.SandboxDamagedException.class, () -> driver.start(request("ws-pending", new StartRequest.Resume())));
        assertTrue(e.getMessage().contains("ram is not the file park left"), e.getMessage());
        Files.move(dir.resolve("ram.orig"), ram, java.nio.file.StandardCopyOption.REPLACE_EXISTING);

        Sandbox back = start("ws-pending", new StartRequest.Resume());
        assertEquals("kept\n", Guest.sh(back.agent(), "cat /tmp/t").out(), "resumed with its memory");
        back.destroy();
    }

    /**
     * A fresh workspace {@code id} whose guest wrote {@code remembered} to /tmp/t (memory only), parked and settled
     * (its park's digests recorded and its RAM file's holes punched); returns its state directory.
     */
    private Path parkedWith(String id, String remembered) throws Exception {
        Sandbox ws = start(id, new StartRequest.Fresh());
        Guest.sh(ws.agent(), "echo " + remembered + " > /tmp/t");
        ws.park();
        Path dir = request(id, new StartRequest.Resume()).stateDir();
        driver.awaitHoles(dir.resolve("ram"));
        return dir;
    }

    /** A park that cannot write its state changes nothing: the machine runs on, and says why. */
    @Test
    void park_stateCannotBeWritten_workspaceStillRunning() throws Exception {
        Sandbox ws = start("ws-nopark", new StartRequest.Fresh());
        Guest.sh(ws.agent(), "echo alive > /tmp/t");
        Path dir = request("ws-nopark", new StartRequest.Resume()).stateDir();
        Files.createDirectories(dir.resolve("state.tmp").resolve("in-the-way")); // the state file cannot be created
        var e = assertThrows(dev.berth.engine.spi.SandboxStillRunningException.class, ws::park);
        assertTrue(e.getMessage().contains("still running as before"), e.getMessage());
        assertTrue(ws.isAlive());
        assertEquals("alive\n", Guest.sh(ws.agent(), "cat /tmp/t").out());
        assertFalse(Files.exists(dir.resolve("state")));
        ImageBuilder.deleteTree(dir.resolve("state.tmp"));
        assertTrue(ws.park().memoryKept(), "parks once the way is clear");
    }
}
