package dev.berth.engine.microvm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.berth.engine.spi.MetaFile;
import dev.berth.engine.spi.SandboxDamagedException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The park manifest's digest against a plain reference (the whole file read, every block hashed), on sparse files
 * whose data extents start and end inside blocks, touch each other and end at a size that is no multiple of a block;
 * for the current 64 KiB blocks and the 4 KiB pages of version 1 manifests, which must still verify.
 */
class ParkManifestTest {
    /** The digest threads of one driver; shared by the cases like a home's. */
    private static final BackgroundTasks TASKS = new BackgroundTasks();

    @TempDir
    Path dir;

    /** The digest as the class comment defines it, over the file's bytes (holes read as zeros). */
    static long reference(Path f, int block) throws Exception {
        byte[] all = Files.readAllBytes(f);
        long sum = 0;
        CRC32C zero = new CRC32C();
        zero.update(new byte[block]);
        for (long b = 0; b * block < all.length; b++) {
            byte[] blk = new byte[block];
            int from = (int) (b * block);
            System.arraycopy(all, from, blk, 0, Math.min(block, all.length - from));
            CRC32C c = new CRC32C();
            c.update(blk);
            if (c.getValue() != zero.getValue()) sum += ParkManifest.mix(b, c.getValue());
        }
        return sum;
    }

    /** A sparse file: data written at scattered offsets (some zero-filled), holes between, an odd size. */
    static Path sparse(Path dir, String name, long seed) throws Exception {
        Path f = dir.resolve(name);
        Random r = new Random(seed);
        try (RandomAccessFile raf = new RandomAccessFile(f.toFile(), "rw")) {
            long size = (3L << 20) + 4096 * 5 + 123;
            raf.setLength(size);
            for (int i = 0; i < 40; i++) {
                long at = (long) (r.nextDouble() * (size - 70_000));
                at = at / 4096 * 4096 + (i % 3 == 0 ? 0 : 4096 * (i % 16)); // page-aligned, anywhere inside a 64 KiB block
                byte[] data = new byte[4096 * (1 + r.nextInt(20))];
                if (i % 5 != 0) r.nextBytes(data); // every fifth extent holds zeros: allocated, but adds nothing
                raf.seek(Math.min(at, size - data.length));
                raf.write(data);
            }
            raf.seek(size - 50);
            raf.write(new byte[] {1, 2, 3}); // a partial last block with data
        }
        return f;
    }

    @Test
    void digest_matchesTheReference_forBlocksAndForVersion1Pages() throws Exception {
        for (long seed = 1; seed <= 5; seed++) {
            Path f = sparse(dir, "f" + seed, seed);
            for (int block : List.of(ParkManifest.blockSize(1), ParkManifest.blockSize(ParkManifest.VERSION))) {
                Map<String, ParkManifest.Entry> m = ParkManifest.measure(TASKS, dir, List.of(f.getFileName().toString()), block);
                ParkManifest.Entry e = m.get(f.getFileName().toString());
                assertEquals(Files.size(f), e.size());
                assertEquals(String.format("%016x", reference(f, block)), e.digest(), "seed " + seed + ", block " + block);
            }
        }
        assertEquals(65536, ParkManifest.blockSize(ParkManifest.VERSION));
    }

    @Test
    void blocks_widenAndMergeExtents_soNoBlockIsHashedTwice() {
        var x = List.of(new Extents.Extent(8192, 4096), new Extents.Extent(0, 4096), new Extents.Extent(65536 + 4096, 4096),
                new Extents.Extent(3 * 65536 + 100, 65536));
        assertEquals(List.of(new Extents.Extent(0, 2 * 65536), new Extents.Extent(3 * 65536, 2 * 65536)), ParkManifest.blocks(x, 65536));
        assertEquals(List.of(new Extents.Extent(0, 4096), new Extents.Extent(8192, 4096), new Extents.Extent(65536 + 4096, 4096),
                new Extents.Extent(3 * 65536, 65536 + 4096)), ParkManifest.blocks(x, 4096));
    }

    @Test
    void digest_unchangedByPunchingZeroPagesIntoHoles_changedByOneByte() throws Exception {
        Path f = sparse(dir, "ram", 7);
        String name = f.getFileName().toString();
        String before = ParkManifest.measure(TASKS, dir, List.of(name)).get(name).digest();
        assertEquals(0, new ProcessBuilder("fallocate", "--dig-holes", f.toString()).inheritIO().start().waitFor());
        assertEquals(before, ParkManifest.measure(TASKS, dir, List.of(name)).get(name).digest(), "holes read as zeros");
        try (RandomAccessFile raf = new RandomAccessFile(f.toFile(), "rw")) {
            raf.seek(1_500_000); // most likely a hole now: the change makes a new data block
            raf.write(1);
        }
        assertNotEquals(before, ParkManifest.measure(TASKS, dir, List.of(name)).get(name).digest());
    }

    @Test
    void verify_acceptsAVersion1Manifest_andStillFindsAChange() throws Exception {
        Path f = sparse(dir, "state", 11);
        Map<String, ParkManifest.Entry> v1 = ParkManifest.measure(TASKS, dir, List.of("state"), ParkManifest.blockSize(1));
        MetaFile.write(dir.resolve(ParkManifest.FILE), ParkManifest.KIND, 1,
                tools.jackson.databind.json.JsonMapper.builder().build().writeValueAsString(new ParkManifest("ws-1", v1)));
        ParkManifest.verify(TASKS, "ws-1", dir); // a workspace parked by the previous version resumes
        try (RandomAccessFile raf = new RandomAccessFile(f.toFile(), "rw")) {
            raf.seek(100);
            raf.write(0x5a);
        }
        SandboxDamagedException e = assertThrows(SandboxDamagedException.class, () -> ParkManifest.verify(TASKS, "ws-1", dir));
        assertTrue(e.getMessage().contains("state has changed since park"), e.getMessage());
        // the current version writes 64 KiB blocks and verifies them
        ParkManifest.write(TASKS, "ws-1", dir, List.of("state"));
        assertEquals(ParkManifest.VERSION, MetaFile.version(dir.resolve(ParkManifest.FILE)));
        ParkManifest.verify(TASKS, "ws-1", dir);
    }

    /** The manifest a park commits: {@code state} digested, {@code pending} by size and inode (as park writes it). */
    static Map<String, ParkManifest.Entry> commitPending(Path dir, String workspaceId, List<String> pending) throws Exception {
        Map<String, ParkManifest.Entry> entries = new java.util.LinkedHashMap<>(ParkManifest.measure(TASKS, dir, List.of("state")));
        for (String f : pending) entries.put(f, ParkManifest.pending(dir.resolve(f)));
        ParkManifest.write(workspaceId, dir, entries, true);
        return entries;
    }

    /**
     * Park commits with the RAM file and the disk pending and digests them right after: until then a pending entry is
     * met by the same file (size and inode), and once completed the manifest checks their content like any other.
     */
    @Test
    void pendingEntries_completedAfterTheCommit_thenContentChecked() throws Exception {
        sparse(dir, "state", 21);
        Path ram = sparse(dir, "ram", 22);
        Map<String, ParkManifest.Entry> entries = commitPending(dir, "ws-1", List.of("ram"));
        assertEquals(3, MetaFile.version(dir.resolve(ParkManifest.FILE)));
        ParkManifest.verify(TASKS, "ws-1", dir); // the same file: accepted while its digest is pending

        ParkManifest.completeLater(TASKS, "ws-1", dir, entries).get(30, java.util.concurrent.TimeUnit.SECONDS);
        String json = MetaFile.read(dir.resolve(ParkManifest.FILE), ParkManifest.KIND, ParkManifest.VERSION);
        assertFalse(json.contains("\"digest\":null"), "no entry is pending once completed: " + json);
        assertEquals(String.format("%016x", reference(ram, ParkManifest.blockSize(ParkManifest.VERSION))),
                ParkManifest.measure(TASKS, dir, List.of("ram")).get("ram").digest());
        ParkManifest.verify(TASKS, "ws-1", dir);
        try (RandomAccessFile raf = new RandomAccessFile(ram.toFile(), "rw")) {
            raf.seek(Extents.data(ram).getFirst().offset() + 10);
            raf.write(0x5a);
        }
        SandboxDamagedException e = assertThrows(SandboxDamagedException.class, () -> ParkManifest.verify(TASKS, "ws-1", dir));
        assertTrue(e.getMessage().contains("ram has changed since park"), e.getMessage());
    }

    /**
     * A server killed between park's commit and its digests leaves pending entries: the next start still refuses a
     * truncated file or another file put in its place (the same bytes in a new inode), and accepts the file park left.
     */
    @Test
    void pendingEntry_afterACrash_refusesATruncatedOrReplacedFile() throws Exception {
        sparse(dir, "state", 31);
        Path ram = sparse(dir, "ram", 32);
        commitPending(dir, "ws-1", List.of("ram"));

        Path saved = dir.resolve("ram.saved");
        Files.copy(ram, saved);
        Files.move(saved, ram, java.nio.file.StandardCopyOption.REPLACE_EXISTING); // same bytes, another file
        SandboxDamagedException replaced = assertThrows(SandboxDamagedException.class, () -> ParkManifest.verify(TASKS, "ws-1", dir));
        assertTrue(replaced.getMessage().contains("ram is not the file park left"), replaced.getMessage());

        commitPending(dir, "ws-1", List.of("ram"));
        ParkManifest.verify(TASKS, "ws-1", dir);
        try (RandomAccessFile raf = new RandomAccessFile(ram.toFile(), "rw")) {
            raf.setLength(raf.length() - 4096);
        }
        SandboxDamagedException truncated = assertThrows(SandboxDamagedException.class, () -> ParkManifest.verify(TASKS, "ws-1", dir));
        assertTrue(truncated.getMessage().contains("(truncated)"), truncated.getMessage());
    }

    /** Version 2 manifests (64 KiB blocks, every entry digested, no inode) still verify. */
    @Test
    void verify_acceptsAVersion2Manifest() throws Exception {
        sparse(dir, "state", 41);
        sparse(dir, "ram", 42);
        Map<String, ParkManifest.Entry> m = ParkManifest.measure(TASKS, dir, List.of("state", "ram"), ParkManifest.blockSize(2));
        StringBuilder files = new StringBuilder();
        m.forEach((k, v) -> files.append(files.isEmpty() ? "" : ",").append("\"").append(k).append("\":{\"size\":").append(v.size())
                .append(",\"digest\":\"").append(v.digest()).append("\"}"));
        MetaFile.write(dir.resolve(ParkManifest.FILE), ParkManifest.KIND, 2, "{\"workspaceId\":\"ws-1\",\"files\":{" + files + "}}");
        ParkManifest.verify(TASKS, "ws-1", dir);
    }
}
