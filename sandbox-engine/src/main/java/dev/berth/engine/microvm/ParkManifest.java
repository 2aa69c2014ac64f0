package dev.berth.engine.microvm;

import dev.berth.engine.spi.MetaFile;
import dev.berth.engine.spi.SandboxDamagedException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.zip.CRC32C;
import tools.jackson.databind.json.JsonMapper;

/**
 * What park wrote, so that resume loads exactly that: the size and a content digest of each file a restore reads
 * (device state, RAM file, data disk), written as a {@link MetaFile} ({@code manifest}, kind {@value #KIND}). Resume
 * checks it before QEMU loads any of it; a difference is a {@link SandboxDamagedException} naming the file.
 *
 * <p>The digest: every 64 KiB block is hashed with CRC32C, mixed with its block number, and the results of all
 * blocks that are not zero are summed (mod 2^64). Zero blocks add nothing and holes read as zeros, so only the blocks
 * that touch the file's data extents are read (a parked 256 MiB RAM file holds some tens of MiB), punching zero pages
 * into holes after park leaves the digest as it was, and the sum splits over threads. Version 1 manifests hashed
 * 4 KiB pages the same way; they are still verified as written (a workspace parked before the change). 64 KiB blocks
 * because the per-call cost of CRC32C made 4 KiB pages hash at 1.2-2.8 GB/s against 4-4.9 GB/s for large buffers on
 * the development host, and the digest is most of what a verified resume costs in CPU beside QEMU's start.
 *
 * <p>Version 3: an entry may be <em>pending</em> (no digest yet, the file's inode instead). Park commits with the
 * device state's digest and the RAM file and disk pending, and {@link #completeLater} digests those two right after
 * (they no longer change once the guest stopped) and rewrites the manifest whole. Everything that reads a parked
 * state in this process waits for that first ({@code BackgroundTasks.awaitExit}). A pending entry is met only after a
 * server was killed in those tens of milliseconds; it is then checked by size and inode (a missing, truncated or
 * replaced file is still refused), and content-checked from the next park on. Decision: digest after the commit
 * rather than on the park path. Measured on the 2-core host, the digests of a 256 MiB test-image RAM file and its disk
 * held park 24-30 ms past QEMU's save (30-40% of park) although they ran beside it; the guarantee they give (what a
 * resume loads is what park left) is the same when they are taken from the same frozen files 0.1 s later.
 *
 * <p>Decision: CRC32C pages, not SHA-256. The manifest guards against the faults that give an agent "half a
 * workspace" (a truncated or torn file, a file from another park, a disk image copied back by hand); this finds those
 * at memory speed (a hardware instruction per page), which keeps the check a small share of park and resume. It is
 * no defence against someone who can write the home: they could rewrite the manifest as well.
 */
record ParkManifest(String workspaceId, Map<String, Entry> files) {
    static final String FILE = "manifest";
    static final String KIND = "park-manifest";
    static final int VERSION = 3;
    /** The unit of the digest, by manifest version (see the class comment). */
    static int blockSize(int version) { return version >= 2 ? 64 * 1024 : PAGE; }
    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final int CHUNK = 4 << 20;
    /** Files with no more data than this are digested on the calling thread. */
    private static final long INLINE = 1 << 20;

    /**
     * One file: its length and the digest of its content (see the class comment); a pending entry (version 3) has no
     * digest yet but the file's inode.
     */
    record Entry(long size, String digest, Long inode) {
        Entry(long size, String digest) { this(size, digest, null); }

        @com.fasterxml.jackson.annotation.JsonIgnore
        boolean pending() { return digest == null; }
    }

    /** A pending entry for {@code f}: its size and inode now, its digest to follow ({@link #completeLater}). */
    static Entry pending(Path f) throws IOException {
        return new Entry(Files.size(f), null, inode(f));
    }

    private static long inode(Path f) throws IOException {
        return ((Number) Files.getAttribute(f, "unix:ino")).longValue();
    }

    /**
     * Digests the pending entries of {@code entries} (files of {@code dir} that no longer change) in the background and
     * then rewrites the manifest with every entry complete. A failure leaves the manifest as it was (pending entries
     * are then checked by size and inode) and is logged.
     */
    static CompletableFuture<Void> completeLater(BackgroundTasks tasks, String workspaceId, Path dir, Map<String, Entry> entries) {
        List<String> pending = entries.entrySet().stream().filter(e -> e.getValue().pending()).map(Map.Entry::getKey).toList();
        if (pending.isEmpty()) return CompletableFuture.completedFuture(null);
        return measureAsync(tasks, dir, pending).thenAcceptAsync(measured -> {
            Map<String, Entry> all = new LinkedHashMap<>(entries);
            for (String n : pending) {
                Entry was = entries.get(n);
                Entry now = measured.get(n);
                if (now.size() != was.size()) {
                    throw new IllegalStateException(n + " changed size after park (" + was.size() + " -> " + now.size() + ")");
                }
                all.put(n, now);
            }
            try {
                write(workspaceId, dir, all, true);
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }, tasks.waits).exceptionally(e -> {
            LOG.log(System.Logger.Level.WARNING, "park manifest of " + dir + " left with pending entries (checked by size and inode): "
                    + (e.getCause() != null ? e.getCause() : e));
            return null;
        });
    }

    private static final System.Logger LOG = System.getLogger(ParkManifest.class.getName());

    /** Measures {@code names} in {@code dir} (in parallel: RAM files are hundreds of MiB) and writes the manifest. */
    static ParkManifest write(BackgroundTasks tasks, String workspaceId, Path dir, List<String> names) throws IOException {
        return write(workspaceId, dir, measure(tasks, dir, names));
    }

    /** Writes the manifest of entries measured before ({@link #measureAsync}, {@link #measure}), in the given order. */
    static ParkManifest write(String workspaceId, Path dir, Map<String, Entry> entries) throws IOException {
        return write(workspaceId, dir, entries, true);
    }

    /**
     * With {@code syncDirectory} false the manifest's name becomes durable with the next {@link MetaFile} write into
     * {@code dir} (park writes the spec that names the state right after it, and nothing reads the manifest before
     * that spec names the state).
     */
    static ParkManifest write(String workspaceId, Path dir, Map<String, Entry> entries, boolean syncDirectory) throws IOException {
        ParkManifest m = new ParkManifest(workspaceId, entries);
        MetaFile.write(dir.resolve(FILE), KIND, VERSION, JSON.writeValueAsString(m), syncDirectory);
        return m;
    }

    /**
     * Starts measuring {@code names} on the digest threads and returns at once: park digests the RAM file and the
     * disk, which no longer change once the guest is stopped, while QEMU writes the device state.
     */
    static CompletableFuture<Map<String, Entry>> measureAsync(BackgroundTasks tasks, Path dir, List<String> names) {
        return CompletableFuture.supplyAsync(() -> {
            try {
                return measure(tasks, dir, names);
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }, tasks.waits);
    }

    /** Joins a {@link #measureAsync}, unwrapping its I/O failure. */
    static Map<String, Entry> join(CompletableFuture<Map<String, Entry>> f) throws IOException {
        try {
            return f.join();
        } catch (java.util.concurrent.CompletionException e) {
            if (e.getCause() instanceof java.io.UncheckedIOException u) throw u.getCause();
            throw e;
        }
    }

    /** Process-wide on purpose: the JIT and the FFM set-up that the warm-up pays for are the process's, not a home's. */
    private static final java.util.concurrent.atomic.AtomicBoolean WARMED = new java.util.concurrent.atomic.AtomicBoolean();

    /**
     * Once per process, in the background: runs the digest code on a temporary sparse file (no disk I/O: its pages
     * are holes), so that the first park and the first resume of a server do not pay for the JIT and the FFM set-up
     * of {@link Extents}. Measured cold in a fresh JVM: the first {@code lseek} handle 185 ms and the first digest of
     * 73 MiB 555 ms, against 19 ms warm.
     */
    static void warmUp(BackgroundTasks tasks) {
        if (!WARMED.compareAndSet(false, true)) return;
        Thread.ofPlatform().daemon().name("berth-digest-warmup").start(() -> {
            Path f = null;
            try {
                f = Files.createTempFile("berth-digest-warmup", ".bin");
                try (java.io.RandomAccessFile raf = new java.io.RandomAccessFile(f.toFile(), "rw")) {
                    raf.setLength(32L << 20);
                }
                Extents.data(f);
                measure(tasks, f.getParent(), List.of(f.getFileName().toString()));
                for (int i = 0; i < 6; i++) digest(f, List.of(new Extents.Extent(0, 32L << 20)), blockSize(VERSION));
                // and the manifest's JSON (the first write of a record type costs tens of ms of introspection)
                JSON.readValue(JSON.writeValueAsString(new ParkManifest("warm-up", Map.of("f", new Entry(1, null, 1L)))), ParkManifest.class);
            } catch (IOException | RuntimeException ignored) {
                // only a warm-up: the first real digest pays instead
            } finally {
                if (f != null) {
                    try { Files.deleteIfExists(f); } catch (IOException ignored) { }
                }
            }
        });
    }

    static boolean exists(Path dir) { return Files.isRegularFile(dir.resolve(FILE)); }

    /**
     * Checks {@code dir} against its manifest: every file present, of the same size and content.
     *
     * @param workspaceId the workspace the state must belong to, or null to check content only
     * @throws SandboxDamagedException naming every file that differs
     */
    static void verify(BackgroundTasks tasks, String workspaceId, Path dir) throws SandboxDamagedException, IOException {
        ParkManifest m;
        int version;
        try {
            version = MetaFile.version(dir.resolve(FILE));
            m = JSON.readValue(MetaFile.read(dir.resolve(FILE), KIND, 1, VERSION), ParkManifest.class);
        } catch (NoSuchFileException e) {
            throw new SandboxDamagedException("its park manifest is missing, so what park wrote cannot be checked");
        } catch (IOException | RuntimeException e) {
            throw new SandboxDamagedException("its park manifest is unreadable: " + e.getMessage());
        }
        if (workspaceId != null && !workspaceId.equals(m.workspaceId())) {
            throw new SandboxDamagedException("its saved state belongs to workspace " + m.workspaceId());
        }
        Map<String, Entry> now;
        List<String> problems = new ArrayList<>();
        List<String> present = new ArrayList<>();
        for (String name : m.files().keySet()) {
            if (Files.isRegularFile(dir.resolve(name))) present.add(name);
            else problems.add(name + " is missing");
        }
        List<String> toDigest = present.stream().filter(n -> !m.files().get(n).pending()).toList();
        now = measure(tasks, dir, toDigest, blockSize(version));
        for (String name : present) {
            Entry want = m.files().get(name);
            if (want.pending()) {
                // park committed and its server died before the digest was recorded: the same file, of the same size
                long size = Files.size(dir.resolve(name));
                long ino = inode(dir.resolve(name));
                if (size != want.size()) {
                    problems.add(name + " is " + size + " bytes, park wrote " + want.size() + (size < want.size() ? " (truncated)" : ""));
                } else if (want.inode() != null && ino != want.inode()) {
                    problems.add(name + " is not the file park left (inode " + ino + ", park left " + want.inode() + ")");
                }
                continue;
            }
            Entry got = now.get(name);
            if (want.size() != got.size()) {
                problems.add(name + " is " + got.size() + " bytes, park wrote " + want.size() + (got.size() < want.size() ? " (truncated)" : ""));
            } else if (!want.digest().equals(got.digest())) {
                problems.add(name + " has changed since park (digest " + got.digest() + ", park wrote " + want.digest() + ")");
            }
        }
        if (!problems.isEmpty()) throw new SandboxDamagedException(String.join("; ", problems));
    }

    private static final int PAGE = 4096;
    private static final long ZERO_PAGE_CRC;

    static {
        CRC32C c = new CRC32C();
        c.update(new byte[PAGE]);
        ZERO_PAGE_CRC = c.getValue();
    }

    /** Digests of {@code names} in {@code dir} as this version writes them. */
    static Map<String, Entry> measure(BackgroundTasks tasks, Path dir, List<String> names) throws IOException {
        return measure(tasks, dir, names, blockSize(VERSION));
    }

    /** Digests of {@code names} in {@code dir}; the blocks of all files are shared out over the available cores. */
    static Map<String, Entry> measure(BackgroundTasks tasks, Path dir, List<String> names, int block) throws IOException {
        List<CompletableFuture<Long>> parts = new ArrayList<>();
        Map<String, List<CompletableFuture<Long>>> byFile = new LinkedHashMap<>();
        Map<String, Long> sizes = new LinkedHashMap<>();
        int threads = Math.max(1, Runtime.getRuntime().availableProcessors());
        for (String n : names) {
            Path f = dir.resolve(n);
            sizes.put(n, Files.size(f));
            List<Extents.Extent> extents = blocks(Extents.data(f), block);
            List<CompletableFuture<Long>> fileParts = new ArrayList<>();
            if (extents.stream().mapToLong(Extents.Extent::length).sum() <= INLINE) {
                // a device state of tens of KiB: on this thread, not worth a hand-off to the pool and back
                CompletableFuture<Long> part = CompletableFuture.completedFuture(digest(f, extents, block));
                fileParts.add(part);
                parts.add(part);
                byFile.put(n, fileParts);
                continue;
            }
            for (List<Extents.Extent> share : share(extents, threads, block)) {
                CompletableFuture<Long> part = CompletableFuture.supplyAsync(() -> {
                    try {
                        return digest(f, share, block);
                    } catch (IOException e) {
                        throw new java.io.UncheckedIOException(e);
                    }
                }, tasks.digest);
                fileParts.add(part);
                parts.add(part);
            }
            byFile.put(n, fileParts);
        }
        Map<String, Entry> out = new LinkedHashMap<>();
        try {
            for (String n : names) {
                long sum = 0;
                for (CompletableFuture<Long> p : byFile.get(n)) sum += p.join();
                out.put(n, new Entry(sizes.get(n), String.format("%016x", sum)));
            }
        } catch (java.util.concurrent.CompletionException e) {
            if (e.getCause() instanceof java.io.UncheckedIOException u) throw u.getCause();
            throw e;
        }
        return out;
    }

    /**
     * The data extents widened to whole blocks, sorted, overlapping and touching ranges merged: every block that holds
     * any data, once (two extents in one block must not hash it twice).
     */
    static List<Extents.Extent> blocks(List<Extents.Extent> extents, int block) {
        List<Extents.Extent> sorted = new ArrayList<>(extents);
        sorted.sort(java.util.Comparator.comparingLong(Extents.Extent::offset));
        List<Extents.Extent> out = new ArrayList<>();
        long curStart = -1, curEnd = -1;
        for (Extents.Extent x : sorted) {
            if (x.length() <= 0) continue;
            long start = x.offset() / block * block;
            long end = (x.offset() + x.length() + block - 1) / block * block;
            if (curStart >= 0 && start <= curEnd) {
                curEnd = Math.max(curEnd, end);
            } else {
                if (curStart >= 0) out.add(new Extents.Extent(curStart, curEnd - curStart));
                curStart = start;
                curEnd = end;
            }
        }
        if (curStart >= 0) out.add(new Extents.Extent(curStart, curEnd - curStart));
        return out;
    }

    /** Splits extents (block-aligned) into about {@code n} shares of similar byte counts, at block boundaries. */
    private static List<List<Extents.Extent>> share(List<Extents.Extent> extents, int n, int block) {
        long total = extents.stream().mapToLong(Extents.Extent::length).sum();
        long per = Math.max(16L << 20, (total + n - 1) / n);
        List<List<Extents.Extent>> out = new ArrayList<>();
        List<Extents.Extent> cur = new ArrayList<>();
        long curBytes = 0;
        for (Extents.Extent x : extents) {
            long start = x.offset() / block * block; // blocks(...) aligned them; be safe anyway
            long end = x.offset() + x.length();
            while (start < end) {
                long take = Math.min(end - start, per - curBytes);
                take = Math.max(block, (take + block - 1) / block * block);
                long stop = Math.min(end, start + take);
                cur.add(new Extents.Extent(start, stop - start));
                curBytes += stop - start;
                start = stop;
                if (curBytes >= per) {
                    out.add(cur);
                    cur = new ArrayList<>();
                    curBytes = 0;
                }
            }
        }
        if (!cur.isEmpty()) out.add(cur);
        return out;
    }

    /** Bytes mapped at a time by {@link #digest}: large enough that mapping costs nothing next to hashing. */
    private static final long MAP_CHUNK = 64L << 20;

    /**
     * The page-sum digest of the given extents of {@code f} (pages past the end of the file read as zero). Whole pages
     * are hashed straight from a read-only mapping (no copy; CRC32C over a mapped buffer is an intrinsic); only a
     * partial last page is read and padded.
     */
    static long digest(Path f, List<Extents.Extent> extents, int block) throws IOException {
        long sum = 0;
        CRC32C crc = new CRC32C();
        long zero = zeroCrc(block);
        try (FileChannel ch = FileChannel.open(f, StandardOpenOption.READ)) {
            long size = ch.size();
            long whole = size / block * block; // whole blocks (mappable: a block is a multiple of the page size)
            List<Extents.Extent> rest = new ArrayList<>();
            for (Extents.Extent x : extents) {
                long pos = x.offset() / block * block;
                long end = Math.min(x.offset() + x.length(), whole);
                while (pos < end) {
                    long len = Math.min(MAP_CHUNK, end - pos);
                    len = (len + block - 1) / block * block;
                    if (pos + len > whole) len = whole - pos;
                    java.nio.MappedByteBuffer map = ch.map(FileChannel.MapMode.READ_ONLY, pos, len);
                    java.lang.foreign.MemorySegment seg = java.lang.foreign.MemorySegment.ofBuffer(map);
                    java.lang.foreign.MemorySegment zeros = zeroBlock(block);
                    long n = pos / block;
                    for (int off = 0; off < len; off += block) {
                        // a zero block adds nothing: found by a vectorized compare (page-cache speed), not hashed (the
                        // guest zeroes what it frees, init_on_free=1, so much of a RAM file's data is zero blocks)
                        if (seg.asSlice(off, block).mismatch(zeros) != -1) {
                            crc.reset();
                            crc.update(map.slice(off, block));
                            long c = crc.getValue();
                            if (c != zero) sum += mix(n, c);
                        }
                        n++;
                    }
                    pos += len;
                }
                if (x.offset() + x.length() > whole && whole < size) rest.add(new Extents.Extent(whole, size - whole));
            }
            if (!rest.isEmpty()) sum += digestRead(ch, List.of(rest.getFirst()), block);
        }
        return sum;
    }

    private static final java.util.concurrent.ConcurrentMap<Integer, java.lang.foreign.MemorySegment> ZERO_BLOCKS =
            new java.util.concurrent.ConcurrentHashMap<>();

    /** A read-only block of zeros of {@code block} bytes, shared. */
    private static java.lang.foreign.MemorySegment zeroBlock(int block) {
        return ZERO_BLOCKS.computeIfAbsent(block, b -> java.lang.foreign.Arena.global().allocate(b, 4096).asReadOnly());
    }

    private static long zeroCrc(int block) {
        if (block == PAGE) return ZERO_PAGE_CRC;
        CRC32C c = new CRC32C();
        c.update(new byte[block]);
        return c.getValue();
    }

    /** The same digest by reading (for the partial last block of a file). */
    private static long digestRead(FileChannel ch, List<Extents.Extent> extents, int block) throws IOException {
        long sum = 0;
        CRC32C crc = new CRC32C();
        long zero = zeroCrc(block);
        long total = 0;
        for (Extents.Extent x : extents) total += x.length();
        // no larger than what is read: a 4 MiB buffer for a 60 KiB device state cost 4-5 ms in allocation alone
        ByteBuffer buf = ByteBuffer.allocateDirect((int) Math.min(CHUNK, Math.max(block, (total + block - 1) / block * block)));
        {
            for (Extents.Extent x : extents) {
                long pos = x.offset();
                long end = x.offset() + x.length();
                while (pos < end) {
                    buf.clear();
                    int want = (int) Math.min(CHUNK, end - pos);
                    buf.limit((want + block - 1) / block * block); // a partial block exists only at the end of the file
                    int n = ch.read(buf, pos);
                    if (n <= 0) break;
                    // a short last block is hashed as if padded with zeros
                    while (buf.position() % block != 0) buf.put((byte) 0);
                    buf.flip();
                    long b = pos / block;
                    while (buf.hasRemaining()) {
                        ByteBuffer p = buf.slice(buf.position(), block);
                        crc.reset();
                        crc.update(p);
                        long c = crc.getValue();
                        if (c != zero) sum += mix(b, c);
                        buf.position(buf.position() + block);
                        b++;
                    }
                    pos += n;
                }
            }
        }
        return sum;
    }

    /** splitmix64 of (page, crc): a page's digest depends on where it is as well as what it holds. */
    static long mix(long page, long crc) {
        long z = page * 0x9E3779B97F4A7C15L + crc;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }
}
