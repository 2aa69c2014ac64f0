package dev.berth.engine.microvm;

import java.io.IOException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Read-only layers shared by snapshots, their forks and the workspace a snapshot was taken of: frozen qcow2
 * overlays ({@code d-<id>.qcow2}) and saved RAM files ({@code r-<id>.ram}).
 *
 * <p>Every directory that uses a layer (a workspace's state directory, a snapshot's) holds its own hard link to
 * it in its {@code layers/} subdirectory, so the file system's link count is the reference count: deleting a
 * snapshot removes its links, and a layer's blocks are freed when the last workspace or snapshot that needs it is
 * gone. Nothing is counted by hand, so no counter can go stale after a crash. Backing file names are relative
 * ({@code layers/d-<id>.qcow2}) and every {@code layers/} directory carries a symbolic link {@code layers -> .}:
 * the same name then resolves from a top overlay ({@code <dir>/data.qcow2}) and from a layer
 * ({@code <dir>/layers/d-<id>.qcow2}), in whichever directory the links are.
 *
 * <p>A live snapshot freezes the running machine's disk without copying it ({@link #freezeLive}): the current top
 * overlay becomes a layer (a hard link) and QEMU switches, while the guest is paused, to a new empty overlay on
 * top of it ({@code blockdev-snapshot-sync}, mode {@code existing}). Chains longer than
 * {@link MicrovmSettings#maxChainDepth()} are flattened by a {@code block-stream} job on the live machine
 * ({@link #flattenIfDeep}).
 */
final class DiskLayers {
    static final String DIR = "layers";
    static final String NEXT_PREFIX = QemuMachine.DATA_DISK + ".next-";
    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final SecureRandom RANDOM = new SecureRandom();
    private static final System.Logger LOG = System.getLogger("berth.microvm");

    private DiskLayers() {}

    static String newId(String prefix) {
        byte[] b = new byte[8];
        RANDOM.nextBytes(b);
        return prefix + HexFormat.of().formatHex(b);
    }

    /** {@code dir/layers}, with its {@code layers -> .} link, created if missing. */
    static Path ensureDir(Path dir) throws IOException {
        Path layers = dir.resolve(DIR);
        Files.createDirectories(layers);
        Path self = layers.resolve(DIR);
        if (!Files.exists(self, LinkOption.NOFOLLOW_LINKS)) {
            try {
                Files.createSymbolicLink(self, Path.of("."));
            } catch (java.nio.file.FileAlreadyExistsException ignored) {
                // made concurrently
            }
        }
        return layers;
    }

    /** A hard link {@code to} of {@code from}; a sparse copy when they are on different file systems. */
    static void link(Path from, Path to) throws IOException {
        try {
            Files.createLink(to, from);
        } catch (FileSystemException e) {
            if (Files.exists(to, LinkOption.NOFOLLOW_LINKS)) throw e;
            SnapshotWriter.copySparse(from, to); // EXDEV (an image cache on another file system): a copy, never shared
        }
    }

    /** Links every layer of {@code fromDir}/layers into {@code toDir}/layers. */
    static void linkAll(Path fromDir, Path toDir) throws IOException {
        Path src = fromDir.resolve(DIR);
        Path dst = ensureDir(toDir);
        if (!Files.isDirectory(src)) return;
        try (var s = Files.list(src)) {
            for (Path p : s.toList()) {
                if (!Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS)) continue;
                Path to = dst.resolve(p.getFileName());
                if (!Files.exists(to, LinkOption.NOFOLLOW_LINKS)) link(p, to);
            }
        }
    }

    /**
     * Makes a layer read-only for everyone, owned by root when Berth is root (a jailed QEMU, running as the
     * workspace's uid, can then neither write nor chmod it). RAM layers are left to {@link VmmJail} (forks must
     * map them read-write, a QEMU 7.2 limit). {@code jailed}: whether the driver jails its QEMUs.
     */
    static void seal(Path layer, boolean jailed) throws IOException {
        if (jailed) {
            Files.setAttribute(layer, "unix:uid", 0, LinkOption.NOFOLLOW_LINKS);
            Files.setAttribute(layer, "unix:gid", 0, LinkOption.NOFOLLOW_LINKS);
        }
        Files.setPosixFilePermissions(layer, java.nio.file.attribute.PosixFilePermissions.fromString("r--r--r--"));
    }

    /** The files of {@code disk}'s backing chain below it (absolute, as QEMU resolves them), top first. */
    static List<Path> chain(Path disk) throws IOException {
        List<Path> files = new ArrayList<>();
        Path at = disk;
        // read from the qcow2 headers (no process: a resume asked qemu-img three times, ~10 ms each under load);
        // anything unusual (not qcow2, a protocol or json: name, a loop) goes to qemu-img as before
        for (int depth = 0; ; depth++) {
            java.util.Optional<String> backing = qcow2Backing(at);
            if (backing == null || depth > 256) return chainByQemuImg(disk);
            if (backing.isEmpty()) return files;
            String b = backing.get();
            if (b.matches("[A-Za-z0-9+.-]+:.*")) return chainByQemuImg(disk); // json:{...}, a protocol (nbd:, ...)
            // as QEMU resolves it (path_combine): relative to the directory of the image that names it, not normalised
            Path parent = at.getParent();
            at = Path.of(b).isAbsolute() || parent == null ? Path.of(b) : parent.resolve(b);
            files.add(at);
        }
    }

    /**
     * The backing file name in a qcow2 header (empty when it has none), or {@code null} when {@code f} is not a qcow2
     * file this reader understands.
     */
    static java.util.Optional<String> qcow2Backing(Path f) throws IOException {
        try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(f, java.nio.file.StandardOpenOption.READ)) {
            java.nio.ByteBuffer h = qcow2Header(ch);
            if (h == null) return null;
            int version = h.getInt(4);
            long offset = h.getLong(8);
            int size = h.getInt(16);
            if (version < 2 || version > 3 || size < 0 || size > 1023) return null;
            if (offset == 0 || size == 0) return java.util.Optional.empty();
            java.nio.ByteBuffer name = java.nio.ByteBuffer.allocate(size);
            while (name.hasRemaining() && ch.read(name, offset + name.position()) > 0) { }
            if (name.hasRemaining()) return null;
            return java.util.Optional.of(new String(name.array(), java.nio.charset.StandardCharsets.UTF_8));
        }
    }

    /** The first 32 bytes of a qcow2 header (magic through virtual size), or null when the file is not qcow2. */
    private static java.nio.ByteBuffer qcow2Header(java.nio.channels.FileChannel ch) throws IOException {
        java.nio.ByteBuffer h = java.nio.ByteBuffer.allocate(32);
        while (h.hasRemaining() && ch.read(h, h.position()) > 0) { }
        return h.hasRemaining() || h.getInt(0) != 0x514649fb ? null : h; // "QFI\xfb"
    }

    /** {@link #chain} as {@code qemu-img info --backing-chain} reports it. */
    static List<Path> chainByQemuImg(Path disk) throws IOException {
        String out = ImageBuilder.run(List.of("qemu-img", "info", "-U", "--backing-chain", "--output=json", disk.toString()), 60);
        List<Path> files = new ArrayList<>();
        JsonNode arr = JSON.readTree(out);
        for (JsonNode n : arr) {
            if (n.has("full-backing-filename")) files.add(Path.of(n.get("full-backing-filename").asString()));
        }
        return files;
    }

    /** The disk's virtual size: from its qcow2 header where it is one, else as {@code qemu-img info} reports it. */
    static long virtualSize(Path disk) throws IOException {
        try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(disk, java.nio.file.StandardOpenOption.READ)) {
            java.nio.ByteBuffer h = qcow2Header(ch);
            if (h != null && (h.getInt(4) == 2 || h.getInt(4) == 3) && h.getLong(24) > 0) return h.getLong(24);
        }
        String out = ImageBuilder.run(List.of("qemu-img", "info", "-U", "--output=json", disk.toString()), 60);
        return JSON.readTree(out).path("virtual-size").asLong();
    }

    /**
     * Freezes the running (paused) machine's disk as a new layer of {@code stateDir} without copying it: links
     * {@code data.qcow2} as {@code layers/d-<id>.qcow2}, creates an empty overlay on it, has QEMU switch to that
     * overlay, then renames it to {@code data.qcow2}. The guest must be paused, and must stay paused until this
     * returns: after a crash before the rename, the leftover {@code data.qcow2.next-<id>} was never written by the
     * guest and is simply dropped ({@link #recover}). Returns the layer's file name.
     */
    static String freezeLive(QemuMachine m, Path stateDir, OverlayTemplates overlays) throws IOException {
        return freezeLive(m, stateDir, overlays, new Phases());
    }

    static String freezeLive(QemuMachine m, Path stateDir, OverlayTemplates overlays, Phases phases) throws IOException {
        String id = newId("d-");
        String layerName = id + ".qcow2";
        Path layers = ensureDir(stateDir);
        Path top = stateDir.resolve(QemuMachine.DATA_DISK);
        Path layer = layers.resolve(layerName);
        Path next = stateDir.resolve(NEXT_PREFIX + id);
        cancelJobs(m);
        Files.createLink(layer, top); // the same blocks under a second name: nothing is copied
        phases.mark("freeze: cancel jobs, link");
        try {
            overlays.create(next, DIR + "/" + layerName, virtualSize(top));
            phases.mark("freeze: create the overlay");
            // a jailed QEMU runs as the workspace's uid: the new overlay is its, like the one it replaces
            Files.setAttribute(next, "unix:uid", Files.getAttribute(top, "unix:uid"), LinkOption.NOFOLLOW_LINKS);
            Files.setAttribute(next, "unix:gid", Files.getAttribute(top, "unix:gid"), LinkOption.NOFOLLOW_LINKS);
            // mode existing: QEMU opens our overlay (its header already names the layer) and puts it on top of the
            // current node; the current node is reopened read-only under its old name, which still is that file
            m.qmp.execute("blockdev-snapshot-sync", Map.of("device", "data", "snapshot-file", next.toAbsolutePath().toString(),
                    "format", "qcow2", "mode", "existing"), Duration.ofSeconds(30));
            phases.mark("freeze: blockdev-snapshot-sync");
        } catch (IOException | RuntimeException e) {
            Files.deleteIfExists(next);
            Files.deleteIfExists(layer);
            throw new IOException("freezing the disk as a layer failed: " + e.getMessage(), e);
        }
        promote(next, top);
        VmSpec.fsync(stateDir);
        VmSpec.fsync(layers);
        seal(layer, m.jailed);
        phases.mark("freeze: promote, fsync, seal");
        return layerName;
    }

    /**
     * Makes the overlay QEMU switched to the workspace's {@code data.qcow2} (a hard link, replacing the old name
     * atomically) and keeps its own name as long as QEMU runs on it: QEMU reopens a node by the name it opened it
     * with (read-only when the next snapshot freezes it), so that name must go on naming that file. Names of
     * earlier tops, frozen by now, are dropped.
     */
    private static void promote(Path next, Path top) throws IOException {
        Path tmp = top.resolveSibling(".data.qcow2.link");
        Files.deleteIfExists(tmp);
        Files.createLink(tmp, next);
        Files.move(tmp, top, StandardCopyOption.ATOMIC_MOVE);
        try (var s = Files.list(top.getParent())) {
            for (Path p : s.toList()) {
                if (p.getFileName().toString().startsWith(NEXT_PREFIX) && !p.equals(next)) Files.delete(p);
            }
        }
    }

    private static Object inode(Path p) throws IOException { return Files.getAttribute(p, "unix:ino"); }

    /** Cancels block jobs (a flattening stream) on the machine and waits until none is left. */
    static void cancelJobs(QemuMachine m) throws IOException {
        JsonNode jobs = m.qmp.execute("query-block-jobs");
        if (jobs == null || jobs.isEmpty()) return;
        for (JsonNode j : jobs) {
            try {
                m.qmp.execute("block-job-cancel", Map.of("device", j.path("device").asString(), "force", true), Duration.ofSeconds(10));
            } catch (IOException ignored) {
                // finished meanwhile
            }
        }
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        long sleep = 1;
        while (true) {
            JsonNode left = m.qmp.execute("query-block-jobs");
            if (left == null || left.isEmpty()) return;
            if (System.nanoTime() > deadline) throw new IOException("block jobs did not stop in 60 s: " + left);
            QmpClient.pollPause(sleep); // asked, not awaited as events: a job may end by cancel or by completing meanwhile
            sleep = Math.min(sleep * 2, 20);
        }
    }

    /**
     * When the disk's chain is longer than {@code maxDepth} layers ({@link MicrovmSettings#maxChainDepth()}), starts a {@code block-stream} job on the running
     * machine that copies the layers into the workspace's own overlay; QEMU rewrites the overlay's header to
     * name no backing file when it completes, and {@link #prune} later drops the links no chain needs. Returns
     * whether a job was started. The guest keeps running meanwhile; a park or snapshot cancels the job (what was
     * streamed stays valid) and the next start begins again.
     */
    static boolean flattenIfDeep(QemuMachine m, Path stateDir, int maxDepth) {
        try {
            int depth = chain(stateDir.resolve(QemuMachine.DATA_DISK)).size();
            if (depth <= maxDepth) return false;
            m.qmp.execute("block-stream", Map.of("device", "data", "job-id", "flatten"), Duration.ofSeconds(10));
            LOG.log(System.Logger.Level.INFO, "flattening a backing chain of " + depth + " layers (limit " + maxDepth + ") in " + stateDir);
            return true;
        } catch (IOException | RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "could not flatten the backing chain in " + stateDir + ": " + e.getMessage());
            return false;
        }
    }

    /**
     * Removes this directory's links to layers its disk's chain and RAM no longer use (after a flattening, or a
     * crash between linking and switching). Only links go: a layer other workspaces or snapshots use keeps their
     * links. Must not run while a machine of this directory is being started or frozen.
     */
    static void prune(Path dir, VmSpec spec, Path disk) throws IOException {
        Path layers = dir.resolve(DIR);
        if (!Files.isDirectory(layers)) return;
        Set<String> used = new LinkedHashSet<>();
        if (Files.isRegularFile(disk)) for (Path p : chain(disk)) used.add(p.getFileName().toString());
        if (spec != null && spec.memPath() != null) used.add(Path.of(spec.memPath()).getFileName().toString());
        try (var s = Files.list(layers)) {
            for (Path p : s.toList()) {
                if (Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS) && !used.contains(p.getFileName().toString())) Files.delete(p);
            }
        }
    }

    /**
     * After a crash, or before a start: {@code data.qcow2.next-<id>} files in {@code stateDir}. One that is
     * {@code data.qcow2} (the same file) is the name a running QEMU knows its disk by: kept for an adopted QEMU
     * ({@code m}), dropped otherwise. One that is not is an overlay a snapshot was switching to when the server
     * died: an adopted QEMU that did switch runs on it, so it becomes {@code data.qcow2}; otherwise the guest never
     * wrote to it (it stays paused until the switch is complete) and it is deleted.
     */
    static void recover(Path stateDir, QemuMachine m) throws IOException {
        List<Path> next;
        try (var s = Files.list(stateDir)) {
            next = s.filter(p -> p.getFileName().toString().startsWith(NEXT_PREFIX)).toList();
        }
        Path top = stateDir.resolve(QemuMachine.DATA_DISK);
        for (Path p : next) {
            if (Files.exists(top) && inode(p).equals(inode(top))) {
                if (m == null) Files.delete(p);
                continue;
            }
            String path = p.toAbsolutePath().toString();
            // QEMU names an overlay whose backing it was given as json:{..."filename": "<path>"...}
            if (m != null && activeFile(m).map(f -> f.equals(path) || f.contains("\"" + path + "\"")).orElse(false)) {
                promote(p, top);
                seal(stateDir.resolve(DIR).resolve(p.getFileName().toString().substring(NEXT_PREFIX.length()) + ".qcow2"), m.jailed);
            } else {
                Files.delete(p);
            }
        }
    }

    /** The file of the data drive's top node, as QEMU names it. */
    static java.util.Optional<String> activeFile(QemuMachine m) throws IOException {
        JsonNode blocks = m.qmp.execute("query-block");
        if (blocks == null) return java.util.Optional.empty();
        for (JsonNode b : blocks) {
            if ("data".equals(b.path("device").asString(""))) {
                return java.util.Optional.of(b.path("inserted").path("image").path("filename").asString(""));
            }
        }
        return java.util.Optional.empty();
    }
}
