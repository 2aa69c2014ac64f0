package dev.berth.engine.microvm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.berth.engine.Await;
import dev.berth.engine.spi.Resources;
import dev.berth.engine.spi.Sandbox;
import dev.berth.engine.spi.SandboxException;
import dev.berth.engine.spi.StartRequest;
import dev.berth.engine.spi.Trees;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Snapshots and forks on shared disk layers (DiskLayers), under TCG with the test image: a snapshot freezes the
 * live disk without copying it, forks link the layers, a snapshot can be deleted under its live forks (and while
 * one is being created), a crash in the middle of the disk switch is recovered, long chains are flattened.
 */
class MicrovmLayersTest {

    static final Resources SMALL = new Resources(1, 160, 128, 1024);
    @TempDir static Path root;
    static MicrovmDriver driver;
    static final List<Sandbox> all = new ArrayList<>();

    static StartRequest request(String id, StartRequest.Mode mode) {
        return new StartRequest(id, root.resolve(id).resolve("state"), root.resolve(id).resolve("run"), mode, SMALL, 0);
    }

    static Sandbox start(String id, StartRequest.Mode mode) throws SandboxException {
        return start(driver, id, mode);
    }

    static Sandbox start(MicrovmDriver on, String id, StartRequest.Mode mode) throws SandboxException {
        Sandbox s = on.start(request(id, mode));
        synchronized (all) { all.add(s); }
        return s;
    }

    static Path stateDir(String id) { return root.resolve(id).resolve("state"); }

    @BeforeAll
    static void setUp() {
        driver = new MicrovmDriver(TestImages.builder(), MicrovmDriver.ImageKind.TEST);
    }

    @AfterAll
    static void tearDown() {
        synchronized (all) { all.forEach(Sandbox::destroy); }
    }

    /** Allocated bytes of the distinct inodes of the qcow2 files under the given directories (hard links once). */
    static long diskBytes(Path... dirs) throws Exception {
        Map<Object, Long> inodes = new HashMap<>();
        for (Path d : dirs) {
            if (!Files.isDirectory(d)) continue;
            try (Stream<Path> s = Files.walk(d)) {
                for (Path p : s.filter(p -> p.toString().endsWith(".qcow2") && Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS)).toList()) {
                    String[] st = ImageBuilder.run(List.of("stat", "-c", "%i %b %B", p.toString()), 10).strip().split(" ");
                    inodes.put(st[0], Long.parseLong(st[1]) * Long.parseLong(st[2]));
                }
            }
        }
        return inodes.values().stream().mapToLong(Long::longValue).sum();
    }

    static int linkCount(Path p) throws Exception { return (Integer) Files.getAttribute(p, "unix:nlink"); }

    @Test
    void snapshot_copiesNoDisk_forksSeeItAndNotEachOther_deletingItKeepsForksWorking() throws Exception {
        Sandbox ws = start("ws-l", new StartRequest.Fresh());
        // 24 MiB of data on the disk: a copying snapshot would write at least that much again
        Guest.sh(ws.agent(), "head -c 25165824 /dev/urandom > /workspace/big; echo snap > /workspace/m; echo mem > /tmp/m; sync");
        long before = diskBytes(stateDir("ws-l"));
        assertTrue(before > 24L << 20, "the data is on the workspace's disk: " + before);
        Path snap = root.resolve("snap-l");
        Sandbox.ParkOutcome so = ws.snapshot(snap);
        assertTrue(so.memoryKept());
        long after = diskBytes(stateDir("ws-l"), snap);
        assertTrue(after - before < 2L << 20, "the snapshot wrote " + (after - before) + " bytes of disk (before " + before
                + ", after " + after + "): the disk must be frozen, not copied");
        VmSpec s = VmSpec.read(snap.resolve(VmSpec.SNAPSHOT_FILE));
        Path layer = snap.resolve(s.disk());
        assertEquals(2, linkCount(layer), "the snapshot's disk layer is the workspace's frozen overlay (one inode, two links)");
        assertEquals(List.of(stateDir("ws-l").resolve(s.disk()).toString()),
                DiskLayers.chain(stateDir("ws-l").resolve("data.qcow2")).stream().map(Path::toString).toList(),
                "the workspace runs on a new overlay over the frozen layer");

        // the workspace writes on after the snapshot; the snapshot does not change
        Guest.sh(ws.agent(), "echo changed > /workspace/m; echo changed > /tmp/m; sync");
        Sandbox f1 = start("fork-l1", new StartRequest.Fork(snap));
        Sandbox f2 = start("fork-l2", new StartRequest.Fork(snap));
        for (Sandbox f : List.of(f1, f2)) {
            assertEquals("snap\nmem\n", Guest.sh(f.agent(), "cat /workspace/m /tmp/m").out());
            assertEquals("25165824\n", Guest.sh(f.agent(), "stat -c %s /workspace/big").out());
        }
        Guest.sh(f1.agent(), "echo fork1 > /workspace/m; sync");
        assertEquals("snap\n", Guest.sh(f2.agent(), "cat /workspace/m").out());
        assertEquals("changed\n", Guest.sh(ws.agent(), "cat /workspace/m").out());
        long forks = diskBytes(stateDir("fork-l1"), stateDir("fork-l2"), stateDir("ws-l"), snap);
        assertTrue(forks - after < 4L << 20, "two forks cost " + (forks - after) + " bytes of disk, not copies");
        String ramLayer = Path.of(s.memPath()).getFileName().toString();
        assertEquals(3, linkCount(snap.resolve(s.memPath())), "the snapshot's RAM is one file linked by both forks");

        // deleting the snapshot (its whole directory) keeps what the forks and the workspace use
        Trees.delete(snap);
        assertEquals(3, linkCount(stateDir("ws-l").resolve(s.disk())), "the frozen layer lives on in the workspace and both forks");
        for (Sandbox f : List.of(f1, f2)) {
            assertEquals("25165824\n", Guest.sh(f.agent(), "stat -c %s /workspace/big; cat /workspace/big > /dev/null").out());
        }
        // a fork parks and resumes without its snapshot
        f2.park();
        Sandbox f2b = start("fork-l2", new StartRequest.Resume());
        assertEquals("snap\nmem\n", Guest.sh(f2b.agent(), "cat /workspace/m /tmp/m").out());
        assertTrue(Files.exists(stateDir("fork-l2").resolve(DiskLayers.DIR).resolve(ramLayer)));
        // closing the forks drops their links; the workspace's own link is the last one
        for (Sandbox f : List.of(f1, f2b)) f.destroy();
        Trees.delete(root.resolve("fork-l1"));
        Trees.delete(root.resolve("fork-l2"));
        assertEquals(1, linkCount(stateDir("ws-l").resolve(s.disk())));
        assertEquals("changed\n", Guest.sh(ws.agent(), "cat /workspace/m").out());
        // a second and third snapshot of the same running machine freeze the overlays the first ones put on top;
        // forks of them start while the machine runs on
        for (int i = 2; i <= 3; i++) {
            Guest.sh(ws.agent(), "echo gen" + i + " > /workspace/m; sync");
            Path next = root.resolve("snap-l" + i);
            ws.snapshot(next);
            Sandbox f = start("fork-l-gen" + i, new StartRequest.Fork(next));
            assertEquals("gen" + i + "\n", Guest.sh(f.agent(), "cat /workspace/m").out());
            assertEquals(i, DiskLayers.chain(stateDir("fork-l-gen" + i).resolve("data.qcow2")).size());
            f.destroy();
        }
        ws.destroy();
    }

    @Test
    void deletingTheSnapshotWhileAForkStarts_theForkStartsWholeOrFailsCleanly() throws Exception {
        Sandbox ws = start("ws-race", new StartRequest.Fresh());
        Guest.sh(ws.agent(), "echo race > /workspace/r; sync");
        Path snap = root.resolve("snap-race");
        ws.snapshot(snap);
        CompletableFuture<Sandbox> fork = CompletableFuture.supplyAsync(() -> {
            try {
                return start("fork-race", new StartRequest.Fork(snap));
            } catch (SandboxException e) {
                throw new java.util.concurrent.CompletionException(e);
            }
        });
        // delete as the engine does: rename out of the way, then remove
        Path doomed = root.resolve(".deleted-snap-race");
        Files.move(snap, doomed, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
        Trees.delete(doomed);
        try {
            Sandbox f = fork.get(120, TimeUnit.SECONDS);
            assertEquals("race\n", Guest.sh(f.agent(), "cat /workspace/r").out(), "a fork that started has all of its snapshot");
            f.destroy();
        } catch (java.util.concurrent.ExecutionException e) {
            assertTrue(e.getCause().getMessage().contains("microvm fork-race: start failed"), e.getCause().getMessage());
            assertFalse(QemuMachine.processOf(root.resolve("fork-race").resolve("run")).isPresent(), "no QEMU left behind");
        }
        assertEquals("race\n", Guest.sh(ws.agent(), "cat /workspace/r").out(), "the workspace is untouched");
        ws.destroy();
    }

    @Test
    void crashDuringTheDiskSwitch_resumeDropsTheNewOverlay_adoptFinishesIt() throws Exception {
        // (1) the server and QEMU die after QEMU switched to the new overlay, before the rename: a cold boot on the
        // workspace's disk (the guest never ran on the new overlay)
        Sandbox ws = start("ws-crash", new StartRequest.Fresh());
        Guest.sh(ws.agent(), "echo kept > /workspace/k; sync");
        QemuMachine m = ((MicrovmSandbox) ws).machine();
        Path next = switchWithoutRename(m, stateDir("ws-crash"));
        m.kill();
        Sandbox cold = start("ws-crash", new StartRequest.Resume());
        assertFalse(Files.exists(next), "the overlay QEMU had switched to is dropped");
        assertEquals("kept\n", Guest.sh(cold.agent(), "cat /workspace/k").out());
        assertEquals(List.of(), DiskLayers.chain(stateDir("ws-crash").resolve("data.qcow2")), "and the layer link is pruned");
        cold.destroy();

        // (2) the server dies at the same point but QEMU lives on, paused: the next server adopts it, keeps the
        // switch (its writes go to the new overlay, renamed into place) and continues the guest
        Sandbox ws2 = start("ws-crash2", new StartRequest.Fresh());
        Guest.sh(ws2.agent(), "echo mem > /tmp/k; echo kept > /workspace/k; sync");
        Path next2 = switchWithoutRename(((MicrovmSandbox) ws2).machine(), stateDir("ws-crash2"));
        // the server "dies": its QMP and agent connections close (QEMU takes one client at a time), QEMU lives on
        ((MicrovmSandbox) ws2).machine().qmp.close();
        ws2.agent().close();
        MicrovmDriver successor = new MicrovmDriver(TestImages.builder(), MicrovmDriver.ImageKind.TEST);
        var adopted = successor.adopt(request("ws-crash2", new StartRequest.Resume()));
        assertTrue(adopted.isPresent());
        Sandbox back = adopted.get();
        synchronized (all) { all.add(back); }
        assertEquals(Files.getAttribute(next2, "unix:ino"), Files.getAttribute(stateDir("ws-crash2").resolve("data.qcow2"), "unix:ino"),
                "the overlay QEMU switched to is the workspace's disk now (and keeps the name QEMU knows it by)");
        assertEquals("mem\nkept\n", Guest.sh(back.agent(), "cat /tmp/k /workspace/k").out());
        Guest.sh(back.agent(), "echo after > /workspace/a; sync");
        back.park();
        // park does not wait for QEMU to exit; the adopting driver's clean-up of the runtime directory must end
        // before another driver on the same home starts there (the engine quiesces a driver it drops: Engine.close)
        successor.quiesce();
        Sandbox again = start("ws-crash2", new StartRequest.Resume());
        assertEquals("after\nkept\n", Guest.sh(again.agent(), "cat /workspace/a /workspace/k").out());
        assertEquals(1, DiskLayers.chain(stateDir("ws-crash2").resolve("data.qcow2")).size());
        again.destroy();
    }

    /** What {@link DiskLayers#freezeLive} does up to (not including) the rename, leaving the guest paused. */
    private static Path switchWithoutRename(QemuMachine m, Path stateDir) throws Exception {
        m.stop();
        String id = DiskLayers.newId("d-");
        Path layers = DiskLayers.ensureDir(stateDir);
        Path top = stateDir.resolve("data.qcow2");
        Files.createLink(layers.resolve(id + ".qcow2"), top);
        Path next = stateDir.resolve(DiskLayers.NEXT_PREFIX + id);
        ImageBuilder.run(List.of("qemu-img", "create", "-q", "-f", "qcow2", "-u", "-b", "layers/" + id + ".qcow2", "-F", "qcow2",
                next.toString(), Long.toString(DiskLayers.virtualSize(top))), 60);
        Files.setAttribute(next, "unix:uid", Files.getAttribute(top, "unix:uid"));
        Files.setAttribute(next, "unix:gid", Files.getAttribute(top, "unix:gid"));
        m.qmp.execute("blockdev-snapshot-sync", Map.of("device", "data", "snapshot-file", next.toAbsolutePath().toString(),
                "format", "qcow2", "mode", "existing"), java.time.Duration.ofSeconds(30));
        assertTrue(DiskLayers.activeFile(m).orElseThrow().contains("\"" + next.toAbsolutePath() + "\""), DiskLayers.activeFile(m).orElseThrow());
        return next;
    }

    @Test
    void forkOfForkChains_longerThanTheLimit_areFlattenedWhileTheForkRuns() throws Exception {
        MicrovmDriver shallow = new MicrovmDriver(TestImages.builder(), MicrovmDriver.ImageKind.TEST,
                MicrovmSettings.fromSystem().withMaxChainDepth(2));
        Sandbox ws = start(shallow, "ws-chain", new StartRequest.Fresh());
        Guest.sh(ws.agent(), "echo 0 > /workspace/g0; sync");
        String from = "ws-chain";
        Sandbox cur = ws;
        for (int g = 1; g <= 3; g++) {
            Path snap = root.resolve("snap-chain-" + g);
            cur.snapshot(snap);
            Sandbox next = start(shallow, "fork-chain-" + g, new StartRequest.Fork(snap));
            Guest.sh(next.agent(), "echo " + g + " > /workspace/g" + g + "; sync");
            if (cur != ws) cur.destroy();
            Trees.delete(snap); // nothing needs the snapshots' names
            cur = next;
            from = "fork-chain-" + g;
        }
        // fork 3 started on a chain of 3 layers (> 2): a block-stream job flattens it while the guest runs
        Path disk = stateDir(from).resolve("data.qcow2");
        assertTrue(Await.within(Duration.ofSeconds(120), () -> DiskLayers.chain(disk).isEmpty()),
                "chain not flattened: " + DiskLayers.chain(disk));
        assertEquals("0\n1\n2\n3\n", Guest.sh(cur.agent(), "cat /workspace/g0 /workspace/g1 /workspace/g2 /workspace/g3").out());
        // after a park the flattened fork drops its links to the old layers; it resumes on its own disk alone
        cur.park();
        Sandbox back = start(shallow, from, new StartRequest.Resume());
        assertEquals("0\n1\n2\n3\n", Guest.sh(back.agent(), "cat /workspace/g0 /workspace/g1 /workspace/g2 /workspace/g3").out());
        try (Stream<Path> s = Files.list(stateDir(from).resolve(DiskLayers.DIR))) {
            assertEquals(List.of(), s.filter(p -> p.getFileName().toString().endsWith(".qcow2")).toList());
        }
        back.destroy();
        ws.destroy();
    }
}
