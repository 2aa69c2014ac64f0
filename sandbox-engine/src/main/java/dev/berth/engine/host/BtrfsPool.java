package dev.berth.engine.host;

import dev.berth.engine.spi.Trees;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Pattern;

/**
 * The namespace driver's layer pool: one btrfs filesystem per Berth home in a sparse image ({@code home/pool/btrfs.img},
 * loop-mounted {@code nosuid,nodev,noatime,discard=async} on {@code home/pool/mnt}), each workspace's and each
 * snapshot's writable layer a subvolume in it ({@code layers/NAME}). A snapshot is a read-only subvolume snapshot and
 * a fork a writable snapshot of that: constant time, the extents shared and refcounted by the filesystem, so deleting
 * a snapshot frees only what no fork still references. The disk limit of a workspace is a qgroup limit on the
 * exclusive bytes of its subvolume (quotas are enabled when the pool is made).
 *
 * <p>The pool is mounted only while an operation needs it ({@link #open}, counted per pool in this JVM): a running
 * workspace's layer is a bind mount of its subvolume, which keeps the filesystem (and its loop device) alive on its
 * own, so the pool needs no teardown and a crashed server leaves nothing that the next open does not find (a
 * mount still there is reused, otherwise the image is mounted again; the loop device of a live filesystem is reused).
 * Every mount by {@link #open} (no other lease open in this JVM, so no operation is between making a subvolume and
 * naming it) deletes subvolumes that no state directory of the home references (a crash between the two).
 *
 * <p>A state directory names its subvolume in a reference file ({@link #REF_FILE}, versioned); deleting that file
 * through {@link Trees#delete} deletes the subvolume first. Needs root; thread-safe.
 */
public final class BtrfsPool {
    /** The reference file in a state directory naming its layer subvolume. */
    public static final String REF_FILE = "layer.btrfs";
    private static final String REF_MAGIC = "berth-layer";
    private static final int REF_VERSION = 1;
    private static final Pattern NAME = Pattern.compile("l-[0-9a-f]{20}");
    private static final SecureRandom RANDOM = new SecureRandom();
    private static final System.Logger LOG = System.getLogger(BtrfsPool.class.getName());
    /**
     * Process-wide on purpose: a pool's mount is the host's, so every user of one directory in this process must share
     * one instance and its count of users, or one would unmount the pool under another.
     */
    private static final Map<Path, BtrfsPool> POOLS = new ConcurrentHashMap<>();

    static {
        Trees.onDelete(REF_FILE, BtrfsPool::release);
    }

    private final Path dir;
    private int users;

    private BtrfsPool(Path dir) { this.dir = dir; }

    /** The pool in {@code dir} ({@code home/pool}); nothing is made or mounted before {@link #open}. */
    public static BtrfsPool at(Path dir) { return POOLS.computeIfAbsent(dir.toAbsolutePath().normalize(), BtrfsPool::new); }

    /**
     * Null when pools can be used here, else why not: root, btrfs in the kernel and btrfs-progs are needed. (The
     * namespace driver's setting {@code berth.namespace.layers=ext4} keeps per-workspace ext4 images even then.)
     */
    public static String unavailable() {
        if (!HostIdentity.isRoot()) return "Berth is not root: it cannot mount a layer pool";
        try {
            if (Files.readAllLines(Path.of("/proc/filesystems")).stream().noneMatch(l -> l.strip().equals("btrfs"))) {
                return "the kernel has no btrfs";
            }
        } catch (IOException e) {
            return "cannot read /proc/filesystems: " + e.getMessage();
        }
        if (!onPath("btrfs") || !onPath("mkfs.btrfs")) return "btrfs-progs is not installed (apt-get install btrfs-progs)";
        return null;
    }

    private static boolean onPath(String tool) {
        for (String d : System.getenv().getOrDefault("PATH", "/usr/sbin:/usr/bin:/sbin:/bin").split(":")) {
            if (Files.isExecutable(Path.of(d, tool))) return true;
        }
        return Files.isExecutable(Path.of("/usr/sbin", tool)) || Files.isExecutable(Path.of("/sbin", tool));
    }

    public Path dir() { return dir; }
    public Path image() { return dir.resolve("btrfs.img"); }
    public Path mountPoint() { return dir.resolve("mnt"); }
    Path layers() { return mountPoint().resolve("layers"); }

    /** The pool mounted for as long as the lease is open. */
    public final class Lease implements AutoCloseable {
        private boolean closed;

        private Lease() {}

        /** Where subvolume {@code name} is while the lease is open. */
        public Path path(String name) { return layers().resolve(checkName(name)); }

        /** A new empty subvolume owned by {@code uid}, mode 0700, its exclusive bytes limited to {@code mib} MiB. */
        public String create(int uid, int mib) throws IOException {
            String name = newName();
            Path p = path(name);
            run("btrfs", "subvolume", "create", p.toString());
            try {
                HostCommand.exec("chown", uid + ":" + uid, p.toString());
                Files.setPosixFilePermissions(p, PosixFilePermissions.fromString("rwx------"));
                limit(name, mib);
            } catch (IOException | RuntimeException e) {
                delete(name);
                throw e;
            }
            return name;
        }

        /** A snapshot of subvolume {@code from}: read-only (a Berth snapshot) or writable with its own limit (a fork). */
        public String snapshot(String from, boolean readOnly, int mib) throws IOException {
            Path src = path(from);
            if (!Files.isDirectory(src, LinkOption.NOFOLLOW_LINKS)) {
                throw new IOException("layer " + from + " is missing from the pool " + image());
            }
            String name = newName();
            if (readOnly) run("btrfs", "subvolume", "snapshot", "-r", src.toString(), path(name).toString());
            else run("btrfs", "subvolume", "snapshot", src.toString(), path(name).toString());
            try {
                if (!readOnly) limit(name, mib);
            } catch (IOException | RuntimeException e) {
                delete(name);
                throw e;
            }
            return name;
        }

        public void limit(String name, int mib) throws IOException {
            run("btrfs", "qgroup", "limit", "-e", mib + "M", path(name).toString());
        }

        /** Deletes the subvolume (if there) and its qgroup; its extents are freed once nothing else references them. */
        public void delete(String name) throws IOException {
            Path p = path(name);
            if (!Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)) return;
            String id = HostCommand.output("btrfs", "inspect-internal", "rootid", p.toString()).strip();
            run("btrfs", "subvolume", "delete", p.toString());
            try {
                HostCommand.exec("btrfs", "qgroup", "destroy", "0/" + id, mountPoint().toString());
            } catch (IOException stillDropping) {
                // the kernel removes the qgroup itself once the subvolume is dropped (6.x); a leftover is empty
            }
        }

        /** Referenced and exclusive bytes of the subvolume's qgroup, after a commit. */
        public long[] bytes(String name) throws IOException {
            HostCommand.exec("btrfs", "filesystem", "sync", mountPoint().toString());
            return committedBytes(name);
        }

        /**
         * Referenced and exclusive bytes of the subvolume's qgroup as of the last commit, without one: exact for a
         * snapshot just made (making it committed the transaction that accounted it).
         */
        public long[] committedBytes(String name) throws IOException {
            Path p = path(name);
            String id = HostCommand.output("btrfs", "inspect-internal", "rootid", p.toString()).strip();
            for (String line : HostCommand.output("btrfs", "qgroup", "show", "--raw", "-re", mountPoint().toString()).split("\n")) {
                String[] f = line.strip().split("\\s+");
                if (f.length >= 3 && f[0].equals("0/" + id)) return new long[] {Long.parseLong(f[1]), Long.parseLong(f[2])};
            }
            throw new IOException("no qgroup for layer " + name + " in the pool " + image());
        }

        /** Bytes the pool's filesystem uses (data and metadata), after a commit. */
        public long usedBytes() throws IOException {
            HostCommand.exec("btrfs", "filesystem", "sync", mountPoint().toString());
            for (String line : HostCommand.output("btrfs", "filesystem", "usage", "-b", mountPoint().toString()).split("\n")) {
                String l = line.strip();
                if (l.startsWith("Used:")) return Long.parseLong(l.substring(5).strip());
            }
            throw new IOException("btrfs filesystem usage printed no Used: line for " + mountPoint());
        }

        /**
         * Waits until every subvolume deleted so far is dropped (btrfs drops a deleted subvolume's tree in the
         * background, for seconds after a large one; benchmarks wait here so one measurement does not pay for the
         * previous one's clean-up).
         */
        public void awaitDropped() throws IOException {
            HostCommand.exec("btrfs", "subvolume", "sync", mountPoint().toString());
        }

        /** The names of the subvolumes in the pool. */
        public List<String> names() throws IOException {
            try (var s = Files.list(layers())) {
                return s.map(p -> p.getFileName().toString()).filter(n -> NAME.matcher(n).matches()).sorted().toList();
            }
        }

        @Override
        public void close() {
            synchronized (BtrfsPool.this) {
                if (closed) return;
                closed = true;
                if (--users == 0) DiskImage.unmount(mountPoint()); // live layers keep the filesystem through their binds
            }
        }
    }

    /**
     * Writes the pool's dirty data and metadata out and commits (syncfs on {@code onPool}, any mount of the pool's
     * filesystem: a workspace's layer), on a background thread of the pool: a snapshot made after it has only what
     * changed since to flush, instead of everything the workspace wrote since the last commit (btrfs commits every
     * 30 s on its own; a snapshot must flush first to be consistent, so without this it pays for the files its
     * workspace has just written). Requests coalesce: one flush runs at a time, and every request made while it runs
     * is answered by the next one. The future completes when a flush that began after the request has ended (a
     * failed flush is logged: the snapshot then flushes itself). A layer's unmount waits for the flush in flight
     * ({@link #awaitFlushes}): {@code sync -f} holds the layer's mount while it runs, and an unmount that met it was
     * refused as busy and retried (a park right after a run took ~200 ms longer while this flush started 250 ms late,
     * to keep its commit off the run's tail: that gain was within the noise end to end, the park's loss was not).
     */
    public java.util.concurrent.CompletableFuture<Void> flushSoon(Path onPool) {
        synchronized (flushLock) {
            if (nextFlush != null) return nextFlush;
            var f = new java.util.concurrent.CompletableFuture<Void>();
            nextFlush = f;
            lastFlush = f;
            FLUSHER.execute(() -> {
                synchronized (flushLock) {
                    if (nextFlush == f) nextFlush = null;
                }
                try {
                    HostCommand.exec("sync", "-f", onPool.toString());
                } catch (IOException | RuntimeException e) {
                    LOG.log(System.Logger.Level.DEBUG, "flushing the layer pool " + image() + " through " + onPool + ": " + e.getMessage());
                } finally {
                    f.complete(null);
                }
            });
            return f;
        }
    }

    /** Waits (up to {@code bound}) until the flush last asked for has ended; a layer unmounts after it. */
    public void awaitFlushes(java.time.Duration bound) {
        java.util.concurrent.CompletableFuture<Void> f;
        synchronized (flushLock) {
            f = lastFlush;
        }
        if (f == null) return;
        try {
            f.get(bound.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS);
        } catch (java.util.concurrent.TimeoutException | java.util.concurrent.ExecutionException e) {
            // a slow or failed flush: the unmount retries and names what holds the mount
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private final Object flushLock = new Object();
    private java.util.concurrent.CompletableFuture<Void> nextFlush;
    private java.util.concurrent.CompletableFuture<Void> lastFlush;
    /** One flusher for every pool of this JVM: flushes are I/O-bound and rare, and never run two at once. */
    private static final java.util.concurrent.ExecutorService FLUSHER = java.util.concurrent.Executors.newSingleThreadExecutor(
            Thread.ofPlatform().daemon().priority(Thread.MIN_PRIORITY).name("berth-pool-flush").factory());

    /** Mounts the pool (made on first use) until the lease is closed. */
    public synchronized Lease open() throws IOException {
        boolean first = users == 0;
        if (first) mount();
        users++;
        Lease lease = new Lease();
        if (first) {
            // no lease in this JVM, so no operation between making a subvolume and naming it: what no state
            // directory names was left by a crash
            try {
                sweep(lease);
            } catch (IOException | RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "sweeping unreferenced layers of " + image() + ": " + e.getMessage());
            }
        }
        return lease;
    }

    private void mount() throws IOException {
        Path at = mountPoint();
        if (DiskImage.isMounted(at)) return; // a crashed server's mount: the same filesystem
        Files.createDirectories(dir);
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx------"));
        boolean fresh = !Files.exists(image());
        if (fresh) make();
        Files.createDirectories(at);
        HostCommand.exec("mount", "-t", "btrfs", "-o", "loop,nosuid,nodev,noatime,discard=async", image().toString(), at.toString());
        if (fresh) {
            HostCommand.exec("btrfs", "quota", "enable", at.toString());
        }
        Files.createDirectories(layers());
        Files.setPosixFilePermissions(layers(), PosixFilePermissions.fromString("rwx------"));
    }

    /**
     * A sparse image as large as the free space of the host filesystem under the pool (at least 1 GiB): nothing is
     * reserved, so the pool can be promised more than the host holds later; a full pool says so by name.
     */
    private void make() throws IOException {
        long free = Files.getFileStore(dir).getUsableSpace();
        if (free < (1L << 30)) {
            throw new IOException("the layer pool " + image() + " needs at least 1 GiB free on the host filesystem of " + dir
                    + ", which has " + (free >> 20) + " MiB; free space or choose another --home");
        }
        Path tmp = dir.resolve("btrfs.img.tmp");
        Files.deleteIfExists(tmp);
        HostCommand.exec("truncate", "-s", String.valueOf(free & ~((1L << 20) - 1)), tmp.toString());
        HostCommand.exec("mkfs.btrfs", "-q", "-f", "-m", "single", "-L", "berth-pool", tmp.toString());
        Files.setPosixFilePermissions(tmp, PosixFilePermissions.fromString("rw-------"));
        Files.move(tmp, image(), StandardCopyOption.ATOMIC_MOVE);
    }

    /** Deletes subvolumes no state directory of this home names (a crash between making one and naming it). */
    private void sweep(Lease lease) throws IOException {
        Path home = dir.getParent();
        Set<String> named = new HashSet<>();
        for (String area : List.of("workspaces", "snapshots")) {
            Path a = home.resolve(area);
            if (!Files.isDirectory(a)) continue;
            try (var s = Files.list(a)) {
                for (Path d : s.toList()) {
                    Path ref = d.resolve("state").resolve(REF_FILE);
                    if (!Files.isRegularFile(ref, LinkOption.NOFOLLOW_LINKS)) continue;
                    try {
                        Ref r = readRef(ref);
                        if (r.pool().equals(dir)) named.add(r.subvolume());
                    } catch (IOException e) {
                        LOG.log(System.Logger.Level.WARNING, e.getMessage());
                        return; // an unreadable reference: delete nothing rather than something in use
                    }
                }
            }
        }
        for (String n : lease.names()) {
            if (!named.contains(n)) {
                LOG.log(System.Logger.Level.INFO, "deleting layer " + n + " of " + image() + ": no workspace or snapshot names it");
                lease.delete(n);
            }
        }
    }

    private void run(String... cmd) throws IOException {
        try {
            HostCommand.exec(cmd);
        } catch (IOException e) {
            String m = String.valueOf(e.getMessage());
            if (m.contains("No space left")) {
                throw new IOException("the layer pool " + image() + " is full; delete workspaces or snapshots you no longer need"
                        + " (" + m + ")", e);
            }
            throw e;
        }
    }

    private static String newName() {
        byte[] b = new byte[10];
        RANDOM.nextBytes(b);
        return "l-" + HexFormat.of().formatHex(b);
    }

    private static String checkName(String name) {
        if (!NAME.matcher(name).matches()) throw new IllegalArgumentException("not a layer name: '" + name + "'");
        return name;
    }

    /** What a state directory's reference file says: the pool (its directory) and the subvolume. */
    public record Ref(Path pool, String subvolume) {}

    /** Writes {@code stateDir}/{@value #REF_FILE} naming {@code subvolume} of this pool (atomically, mode 0600). */
    public void writeRef(Path stateDir, String subvolume) throws IOException {
        checkName(subvolume);
        Path tmp = stateDir.resolve(REF_FILE + ".tmp");
        Files.writeString(tmp, REF_MAGIC + " " + REF_VERSION + "\npool " + dir + "\nsubvolume " + subvolume + "\n");
        Files.setPosixFilePermissions(tmp, PosixFilePermissions.fromString("rw-------"));
        Files.move(tmp, stateDir.resolve(REF_FILE), StandardCopyOption.ATOMIC_MOVE);
    }

    /** Reads a reference file, refusing anything but this format's versions by name. */
    public static Ref readRef(Path file) throws IOException {
        List<String> lines = Files.readAllLines(file);
        String[] head = lines.isEmpty() ? new String[0] : lines.get(0).split(" ");
        if (head.length != 2 || !head[0].equals(REF_MAGIC)) throw new IOException(file + " is not a layer reference");
        int v;
        try {
            v = Integer.parseInt(head[1]);
        } catch (NumberFormatException e) {
            throw new IOException(file + " has no readable version: '" + head[1] + "'");
        }
        if (v < 1 || v > REF_VERSION) {
            throw new IOException(file + " is layer reference version " + v + "; this Berth reads up to " + REF_VERSION
                    + ": a newer Berth wrote it");
        }
        String pool = null, sub = null;
        for (String l : lines.subList(1, lines.size())) {
            if (l.startsWith("pool ")) pool = l.substring(5);
            else if (l.startsWith("subvolume ")) sub = l.substring(10);
        }
        if (pool == null || sub == null || !NAME.matcher(sub).matches() || !Path.of(pool).isAbsolute()) {
            throw new IOException(file + " does not name a pool and a layer");
        }
        return new Ref(Path.of(pool).normalize(), sub);
    }

    /**
     * The {@link Trees#delete} hook: deletes the subvolume a state directory's reference names. Only root's own
     * reference files in a {@code state} directory count (a workspace cannot plant one that deletes another's layer).
     */
    private static void release(Path refFile) throws IOException {
        if (!refFile.getParent().getFileName().toString().equals("state")) return;
        if (HostIdentity.isRoot() && (int) Files.getAttribute(refFile, "unix:uid", LinkOption.NOFOLLOW_LINKS) != 0) return;
        Ref r;
        try {
            r = readRef(refFile);
        } catch (IOException e) {
            LOG.log(System.Logger.Level.WARNING, "not releasing " + refFile + ": " + e.getMessage());
            return;
        }
        BtrfsPool pool = at(r.pool());
        if (!Files.exists(pool.image())) return; // the pool itself is gone: nothing to free
        try (Lease l = pool.open()) {
            l.delete(r.subvolume());
        }
    }
}
