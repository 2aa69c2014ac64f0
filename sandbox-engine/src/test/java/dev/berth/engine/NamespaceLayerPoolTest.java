package dev.berth.engine;

import dev.berth.engine.api.EngineConfig;
import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.OpenRequest;
import dev.berth.engine.api.OutputListener;
import dev.berth.engine.api.RunRequest;
import dev.berth.engine.api.RunResult;
import dev.berth.engine.api.SnapshotInfo;
import dev.berth.engine.api.Tenant;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.berth.engine.host.BtrfsPool;
import dev.berth.engine.namespace.NamespaceDriver;
import dev.berth.engine.spi.Limit;
import dev.berth.engine.spi.Resources;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The namespace driver's btrfs layer pool, through the engine on real btrfs: snapshot and fork share extents instead
 * of copying (pool usage and a fork's exclusive bytes stay near zero), a fork's writes stay its own, a snapshot can be
 * deleted while its forks live, the qgroup limit stops one workspace and not its neighbour, and a server that
 * crashed with the pool mounted and a subvolume half-made is recovered; what a run wrote is committed in the
 * background when it ends (a later snapshot does not pay for it). Needs root, btrfs and btrfs-progs.
 */
class NamespaceLayerPoolTest {
    static final Tenant T = Tenant.LOCAL;
    Path home;
    Engine engine;

    @BeforeEach
    void start() throws Exception {
        assumeTrue(BtrfsPool.unavailable() == null, "no layer pool here: " + BtrfsPool.unavailable());
        home = Files.createTempDirectory("berth-pool-");
        engine = Engine.start(EngineConfig.defaults(home, List.of(new NamespaceDriver(home))));
    }

    @AfterEach
    void stop() throws Exception {
        if (engine != null) engine.close();
        if (home != null) dev.berth.engine.spi.Trees.delete(home);
    }

    BtrfsPool pool() { return BtrfsPool.at(home.resolve("pool")); }

    String layerOf(Path dir) throws Exception { return BtrfsPool.readRef(dir.resolve("state").resolve(BtrfsPool.REF_FILE)).subvolume(); }

    String run(String ws, String cmd) throws EngineException {
        RunResult r = engine.run(T, RunRequest.of(ws, cmd), OutputListener.NONE);
        assertEquals(0, r.exitCode(), cmd + " -> " + r);
        return r.stdout();
    }

    @Test
    void snapshotAndFork_shareTheFiles_andForksStayApart() throws Exception {
        String ws = engine.open(T, OpenRequest.persistent("tpl")).workspace().id();
        // 5,000 small files and 32 MiB of random bytes
        run(ws, "mkdir -p repo && cd repo && for d in $(seq 1 50); do mkdir $d; (cd $d && head -c 204800 /dev/urandom | split -b 2048 -a 3 - f); done"
                + " && head -c 33554432 /dev/urandom > /workspace/blob && find /workspace/repo -type f | wc -l");
        String sum = run(ws, "md5sum /workspace/blob | cut -c1-32");
        assertTrue(engine.info(T, ws).limits().stream().anyMatch(l -> l.name().equals("disk") && l.enforced()
                && l.how().contains("qgroup")), engine.info(T, ws).limits().toString());

        long before;
        try (var l = pool().open()) {
            before = l.usedBytes();
        }
        SnapshotInfo snap = engine.snapshot(T, ws, "tpl-snap");
        assertTrue(snap.stateBytes() > 32L << 20, "the snapshot reports what it holds: " + snap.stateBytes());
        String a = engine.open(T, new OpenRequest("a", "persistent", "tpl-snap", null, null)).workspace().id();
        String b = engine.open(T, new OpenRequest("b", "persistent", "tpl-snap", null, null)).workspace().id();
        try (var l = pool().open()) {
            long grown = l.usedBytes() - before;
            assertTrue(grown < 4L << 20, "a snapshot and two forks of 32 MiB + 5,000 files must not copy them; the pool grew by " + grown);
            long[] fork = l.bytes(layerOf(home.resolve("workspaces").resolve(a)));
            assertTrue(fork[0] > 32L << 20, "the fork references the snapshot's data: " + fork[0]);
            assertTrue(fork[1] < 1L << 20, "the fork owns almost nothing of its own: " + fork[1] + " exclusive bytes");
        }

        // the forks see the template's files as their own uid, and their writes stay their own
        assertEquals(sum, run(a, "md5sum /workspace/blob | cut -c1-32"));
        assertEquals("5000\n", run(b, "find /workspace/repo -type f | wc -l"));
        run(a, "echo mine > /workspace/only-a && rm /workspace/repo/1/faaa && touch /workspace/repo/2/fresh");
        assertEquals("no\n", run(b, "test -e /workspace/only-a && echo yes || echo no"));
        assertEquals("yes\n", run(b, "test -e /workspace/repo/1/faaa && echo yes || echo no"));
        assertEquals("no\n", run(ws, "test -e /workspace/only-a && echo yes || echo no"));
        Path snapLayer;
        try (var l = pool().open()) {
            snapLayer = l.path(layerOf(home.resolve("snapshots").resolve(snap.id())));
            assertFalse(Files.exists(snapLayer.resolve("workspace/only-a")), "a fork's write must not reach the snapshot");
            assertTrue(Files.exists(snapLayer.resolve("workspace/repo/1/faaa")));
        }
        String c = engine.open(T, new OpenRequest("c", "ephemeral", "tpl-snap", null, null)).workspace().id();
        assertEquals("no\n", run(c, "test -e /workspace/only-a && echo yes || echo no"));
        engine.closeWorkspace(T, c, false);

        // deleting the snapshot while forks live: allowed, its subvolume goes, the forks keep every file
        String snapName = snapLayer.getFileName().toString();
        engine.deleteSnapshot(T, "tpl-snap");
        try (var l = pool().open()) {
            assertFalse(l.names().contains(snapName), "the snapshot's subvolume is deleted");
        }
        assertEquals(sum, run(a, "md5sum /workspace/blob | cut -c1-32"));
        assertEquals(sum, run(b, "md5sum /workspace/blob | cut -c1-32"));
        engine.park(T, b);
        assertEquals("mine\n", run(a, "cat /workspace/only-a"));
        assertEquals("5000\n", run(b, "find /workspace/repo -type f | wc -l"), "a parked fork resumes with its files");

        // closing with delete frees every layer: only the template's and the two forks' remain, then none
        engine.closeWorkspace(T, a, true);
        engine.closeWorkspace(T, b, true);
        engine.closeWorkspace(T, ws, true);
        try (var l = pool().open()) {
            assertEquals(List.of(), l.names(), "no layer outlives its workspace or snapshot");
        }
    }

    @Test
    void runEnd_commitsWhatTheRunWrote_inTheBackground() throws Exception {
        String ws = engine.open(T, OpenRequest.persistent("flushed")).workspace().id();
        // no sync inside: what the run wrote is dirty in memory when its result comes back
        run(ws, "head -c 16777216 /dev/urandom > /workspace/data && mkdir -p repo && cd repo && head -c 2048000 /dev/urandom | split -b 2048 -a 3 - f");
        engine.flushed(T, ws).get(2, java.util.concurrent.TimeUnit.MINUTES);
        // qgroup numbers change only when a transaction commits: reading them without a commit of our own shows
        // that the background flush committed the run's writes (btrfs's own periodic commit is 30 s away)
        try (var l = pool().open()) {
            long[] b = l.committedBytes(layerOf(home.resolve("workspaces").resolve(ws)));
            assertTrue(b[1] > 16L << 20, "the run's 18 MiB are committed after the background flush: " + b[1] + " exclusive bytes");
        }
        // and a snapshot right after has only its own commit to make; what it reports is what it holds
        SnapshotInfo snap = engine.snapshot(T, ws, null);
        assertTrue(snap.stateBytes() > 16L << 20, "the snapshot reports what it holds: " + snap.stateBytes());
    }

    @Test
    void quota_stopsOneWorkspace_notItsNeighbour() throws Exception {
        Resources small = new Resources(1, 256, 64, 256);
        String full = engine.open(T, new OpenRequest("full", "persistent", null, null, small)).workspace().id();
        String next = engine.open(T, new OpenRequest("next", "persistent", null, null, small)).workspace().id();
        Limit disk = engine.info(T, full).limits().stream().filter(l -> l.name().equals("disk")).findFirst().orElseThrow();
        assertTrue(disk.enforced(), disk.toString());
        RunResult fill = engine.run(T, RunRequest.of(full, "dd if=/dev/urandom of=/workspace/fill bs=1M count=100"), OutputListener.NONE);
        assertNotEquals(0, fill.exitCode());
        assertTrue(fill.stderr().contains("Disk quota exceeded") || fill.stderr().contains("No space left"), fill.stderr());
        assertEquals("ok\n", run(next, "dd if=/dev/urandom of=/workspace/f bs=1M count=40 2>/dev/null && echo ok"));
        // the full one still answers and can free its space
        assertEquals("ok\n", run(full, "rm /workspace/fill && sync && echo ok"));

        // a nested subvolume would be counted in a qgroup of its own, outside the limit: the runs' seccomp filter
        // refuses creating one (BTRFS_IOC_SUBVOL_CREATE and _V2), as it refuses snapshots
        for (String call : List.of("0x5000940e, bytearray(struct.pack('q4088s', 0, b'nested'))",
                "0x50009418, bytearray(struct.pack('qQQ32s4040s', 0, 0, 0, b'', b'nested'))")) {
            RunResult nest = engine.run(T, RunRequest.of(next, "python3 -c \"import fcntl, os, struct; fd = os.open('/workspace', os.O_RDONLY);"
                    + " fcntl.ioctl(fd, " + call + ")\""), OutputListener.NONE);
            assertNotEquals(0, nest.exitCode(), nest.toString());
            assertTrue(nest.stderr().contains("Operation not permitted"), nest.stderr());
            assertEquals("no\n", run(next, "test -e /workspace/nested && echo yes || echo no"));
        }

        // a fork gets its own limit, counted on what it writes itself
        engine.snapshot(T, next, "next-snap");
        String fork = engine.open(T, new OpenRequest("fork", "persistent", "next-snap", null, small)).workspace().id();
        RunResult f = engine.run(T, RunRequest.of(fork, "dd if=/dev/urandom of=/workspace/g bs=1M count=100"), OutputListener.NONE);
        assertNotEquals(0, f.exitCode());
        assertTrue(f.stderr().contains("Disk quota exceeded") || f.stderr().contains("No space left"), f.stderr());
        assertEquals("40\n", run(fork, "du -m /workspace/f | cut -f1"));
    }

    @Test
    void crashWithPoolMountedAndAHalfMadeLayer_isRecovered() throws Exception {
        String ws = engine.open(T, OpenRequest.persistent("keeper")).workspace().id();
        run(ws, "echo precious > /workspace/keep");
        engine.snapshot(T, ws, "keeper-snap");
        engine.park(T, ws);
        String orphan;
        try (var l = pool().open()) {
            orphan = l.create(65534, 16); // made, never named: a crash between the two
        }
        engine.close();
        engine = null;
        // the crashed server's pool mount is still there
        Path mnt = pool().mountPoint();
        assertEquals(0, new ProcessBuilder("mount", "-t", "btrfs", "-o", "loop,nosuid,nodev", pool().image().toString(), mnt.toString())
                .inheritIO().start().waitFor());
        try {
            engine = Engine.start(EngineConfig.defaults(home, List.of(new NamespaceDriver(home))));
            assertEquals("precious\n", run("keeper", "cat /workspace/keep"));
            String fork = engine.open(T, new OpenRequest("f", "ephemeral", "keeper-snap", null, null)).workspace().id();
            assertEquals("precious\n", run(fork, "cat /workspace/keep"));
            try (var l = pool().open()) {
                assertFalse(l.names().contains(orphan), "a layer no state directory names is deleted at recovery");
                assertEquals(3, l.names().size(), "the workspace's, the snapshot's and the fork's: " + l.names());
            }
        } finally {
            if (engine != null) engine.close();
            engine = null;
            new ProcessBuilder("umount", "-l", mnt.toString()).inheritIO().start().waitFor();
        }
    }
}
