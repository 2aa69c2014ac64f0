package dev.berth.engine.image;

import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileTime;
import java.security.DigestInputStream;
import java.security.MessageDigest;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.Set;
import java.util.zip.GZIPInputStream;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;

/**
 * Applies OCI layers, in order, to a root tree on the host: whiteouts ({@code .wh.NAME}) delete what lower layers
 * made, opaque directories ({@code .wh..wh..opq}) hide a lower layer's directory contents, owners and modes are kept.
 *
 * <p>A layer is hostile input. Every entry's path is checked before anything is written: an absolute path, a
 * {@code ..} component, or a path that goes through a symbolic link (planted by this or a lower layer, so that a
 * later entry would be written outside the tree) refuses the whole import. Nothing ever follows a link in the tree:
 * files are created with {@code NOFOLLOW_LINKS}, owners set with lchown. Device nodes and FIFOs are dropped and
 * setuid/setgid bits cleared, each stated in the {@link ImportReport}; extended attributes (file capabilities
 * included) are not kept. The unpacked size is counted against {@link ImportLimits#maxTreeBytes()}.
 *
 * <p>Not thread-safe: one applier per import. Needs root for ownership (without it, files belong to the importer).
 */
final class LayerApplier {
    private static final String WHITEOUT = ".wh.";
    private static final String OPAQUE = ".wh..wh..opq";
    private static final LinkOption NOFOLLOW = LinkOption.NOFOLLOW_LINKS;

    private final Path root;
    private final long maxTreeBytes;
    private final ImportReport.Builder report;
    private final boolean root0 = dev.berth.engine.host.HostIdentity.isRoot();
    private long treeBytes;

    LayerApplier(Path root, long maxTreeBytes, ImportReport.Builder report) {
        this.root = root;
        this.maxTreeBytes = maxTreeBytes;
        this.report = report;
    }

    long treeBytes() { return treeBytes; }

    /**
     * Applies one layer blob (tar, plain or gzip- or zstd-compressed, told by its first bytes) and returns the SHA-256 of the
     * uncompressed tar ({@code sha256:...}), which the caller compares with the config's {@code diff_ids}.
     */
    String apply(Path blob, String label) throws IOException, ImageException {
        MessageDigest sha = sha256();
        try (InputStream raw = new BufferedInputStream(Files.newInputStream(blob), 1 << 16)) {
            InputStream in = decompressed(raw, label);
            DigestInputStream digested = new DigestInputStream(in, sha);
            TarArchiveInputStream tar = new TarArchiveInputStream(digested);
            Set<Path> made = new HashSet<>();
            TarArchiveEntry e;
            try {
                while ((e = tar.getNextEntry()) != null) entry(tar, e, made, label);
            } catch (IOException | IllegalArgumentException ex) {
                if (ex instanceof ImageIOException iie) throw iie.refusal;
                throw new ImageException(label + " is not a readable tar (truncated or corrupt?): " + ex.getMessage(), ex);
            }
            digested.transferTo(OutputStream.nullOutputStream()); // the tar's end padding counts in its digest
        } catch (java.util.zip.ZipException | com.github.luben.zstd.ZstdIOException ex) {
            throw new ImageException(label + " cannot be decompressed (truncated or corrupt?): " + ex.getMessage(), ex);
        } catch (java.io.EOFException ex) {
            throw new ImageException(label + " ends early (truncated): " + ex.getMessage(), ex);
        }
        return "sha256:" + HexFormat.of().formatHex(sha.digest());
    }

    private static InputStream decompressed(InputStream raw, String label) throws IOException {
        raw.mark(4);
        byte[] magic = raw.readNBytes(4);
        raw.reset();
        if (magic.length >= 2 && (magic[0] & 0xff) == 0x1f && (magic[1] & 0xff) == 0x8b) return new GZIPInputStream(raw, 1 << 16);
        if (magic.length == 4 && (magic[0] & 0xff) == 0x28 && (magic[1] & 0xff) == 0xb5 && (magic[2] & 0xff) == 0x2f
                && (magic[3] & 0xff) == 0xfd) {
            return new com.github.luben.zstd.ZstdInputStream(raw);
        }
        return raw;
    }

    /** Carries an {@link ImageException} through the tar reader's IOException-only paths. */
    private static final class ImageIOException extends IOException {
        final ImageException refusal;
        ImageIOException(ImageException refusal) { super(refusal.getMessage()); this.refusal = refusal; }
    }

    private void entry(TarArchiveInputStream tar, TarArchiveEntry e, Set<Path> made, String label) throws IOException {
        String name = e.getName();
        Path rel;
        try {
            rel = relative(name, label);
        } catch (ImageException x) {
            throw new ImageIOException(x);
        }
        if (rel == null) return; // the root itself
        Path target = root.resolve(rel);
        try {
            checkParents(rel, label, name);
        } catch (ImageException x) {
            throw new ImageIOException(x);
        }
        String base = rel.getFileName().toString();
        Path parent = target.getParent();
        if (base.equals(OPAQUE)) {
            purgeLower(parent, made);
            return;
        }
        if (base.startsWith(WHITEOUT)) {
            Path victim = parent.resolve(base.substring(WHITEOUT.length()));
            if (!made.contains(victim)) dev.berth.engine.spi.Trees.delete(victim);
            return;
        }
        Files.createDirectories(parent);
        int mode = e.getMode() & 07777;
        if (e.isCharacterDevice() || e.isBlockDevice()) {
            report.dropped("/" + rel + ": " + (e.isCharacterDevice() ? "character" : "block") + " device " + e.getDevMajor() + ","
                    + e.getDevMinor() + " dropped (a workspace gets its own /dev)");
            return;
        }
        if (e.isFIFO()) {
            report.dropped("/" + rel + ": FIFO dropped");
            return;
        }
        if ((mode & 06000) != 0 && !e.isSymbolicLink() && !e.isDirectory()) {
            report.changed("/" + rel + ": " + ((mode & 04000) != 0 ? "setuid" : "") + ((mode & 06000) == 06000 ? "+" : "")
                    + ((mode & 02000) != 0 ? "setgid" : "") + " bit cleared (mode " + Integer.toOctalString(mode) + ")");
            mode &= ~06000;
        }
        if (e.isDirectory()) {
            if (Files.exists(target, NOFOLLOW) && !Files.isDirectory(target, NOFOLLOW)) Files.delete(target);
            if (!Files.isDirectory(target, NOFOLLOW)) Files.createDirectory(target);
            mode &= ~06000;
            made.add(target);
            own(target, e, mode);
            return;
        }
        removeExisting(target);
        made.add(target);
        if (e.isSymbolicLink()) {
            // the target is kept as written: it is only ever resolved inside the sandbox, never by the importer
            Files.createSymbolicLink(target, Path.of(e.getLinkName()));
            own(target, e, -1);
        } else if (e.isLink()) {
            Path linked;
            try {
                Path lrel = relative(e.getLinkName(), label);
                if (lrel == null) throw new ImageException(label + ": hard link /" + rel + " points at the root directory");
                checkParents(lrel, label, e.getLinkName());
                linked = root.resolve(lrel);
            } catch (ImageException x) {
                throw new ImageIOException(x);
            }
            if (!Files.isRegularFile(linked, NOFOLLOW)) {
                throw new ImageIOException(new ImageException(label + ": hard link /" + rel + " points at '" + e.getLinkName()
                        + "', which is not a regular file of the image"));
            }
            Files.createLink(target, linked);
        } else if (e.isFile()) {
            long n = 0;
            try (OutputStream out = Files.newOutputStream(target, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE, NOFOLLOW)) {
                byte[] buf = new byte[1 << 16];
                int r;
                while ((r = tar.read(buf)) > 0) {
                    n += r;
                    if (treeBytes + n > maxTreeBytes) {
                        throw new ImageIOException(new ImageException("the image is larger than the limit of "
                                + (maxTreeBytes >> 20) + " MiB unpacked (reached at " + label + ", /" + rel + ")"));
                    }
                    out.write(buf, 0, r);
                }
            }
            treeBytes += n;
            own(target, e, mode);
        } else {
            throw new ImageIOException(new ImageException(label + ": entry '" + name + "' has a tar type ("
                    + (char) e.getLinkFlag() + ") this import does not handle"));
        }
    }

    /** The entry's path relative to the root, or null for the root itself; refuses absolute paths and {@code ..}. */
    static Path relative(String name, String label) throws ImageException {
        String n = name;
        while (n.startsWith("./")) n = n.substring(2);
        if (n.startsWith("/")) throw new ImageException(label + ": entry '" + name + "' has an absolute path (it would land outside the image)");
        if (n.endsWith("/")) n = n.substring(0, n.length() - 1);
        if (n.isEmpty() || n.equals(".")) return null;
        if (n.indexOf('\0') >= 0) throw new ImageException(label + ": entry name contains a NUL byte");
        Path p = Path.of(n);
        for (Path c : p) {
            if (c.toString().equals("..")) throw new ImageException(label + ": entry '" + name + "' climbs out of the image with '..'");
        }
        return p.normalize();
    }

    /** Every existing ancestor of {@code rel} must be a real directory: never write through a symbolic link. */
    private void checkParents(Path rel, String label, String name) throws ImageException {
        Path cur = root;
        for (int i = 0; i < rel.getNameCount() - 1; i++) {
            cur = cur.resolve(rel.getName(i));
            if (Files.isSymbolicLink(cur)) {
                throw new ImageException(label + ": entry '" + name + "' goes through the symbolic link /" + root.relativize(cur)
                        + " (a write through it could land outside the image)");
            }
            if (Files.exists(cur, NOFOLLOW) && !Files.isDirectory(cur, NOFOLLOW)) {
                throw new ImageException(label + ": entry '" + name + "' needs /" + root.relativize(cur) + " to be a directory, but it is a file");
            }
        }
    }

    /** An opaque directory: what lower layers put in {@code dir} goes; what this layer made there stays. */
    private void purgeLower(Path dir, Set<Path> made) throws IOException {
        if (!Files.isDirectory(dir, NOFOLLOW)) {
            Files.createDirectories(dir);
            return;
        }
        try (DirectoryStream<Path> ds = Files.newDirectoryStream(dir)) {
            for (Path c : ds) {
                if (!made.contains(c)) dev.berth.engine.spi.Trees.delete(c);
                else if (Files.isDirectory(c, NOFOLLOW)) purgeLower(c, made);
            }
        }
    }

    private static void removeExisting(Path target) throws IOException {
        if (Files.isDirectory(target, NOFOLLOW)) dev.berth.engine.spi.Trees.delete(target);
        else Files.deleteIfExists(target);
    }

    /** Ids an image's files may keep: the 65,536 a workspace maps (namespace level: its slot; issue 32). */
    static final long MAPPED_IDS = 65_536;
    /** What an id beyond {@link #MAPPED_IDS} becomes: the overflow id (nobody, nogroup), as an unmapped id shows anyway. */
    static final int OVERFLOW_ID = 65_534;

    private void own(Path p, TarArchiveEntry e, int mode) throws IOException {
        long uid = e.getLongUserId(), gid = e.getLongGroupId();
        if (uid >= MAPPED_IDS || gid >= MAPPED_IDS || uid < 0 || gid < 0) {
            // the mapping rule, listed in the import's report: ids 0..65,535 are kept, any other becomes 65534
            long u = uid >= 0 && uid < MAPPED_IDS ? uid : OVERFLOW_ID, g = gid >= 0 && gid < MAPPED_IDS ? gid : OVERFLOW_ID;
            report.changed("/" + root.relativize(p) + ": owner " + uid + ":" + gid + " is outside the 65,536 ids a workspace maps;"
                    + " imported as " + u + ":" + g + " (an id above 65,535 becomes 65534, nobody/nogroup)");
            uid = u;
            gid = g;
        }
        if (root0) {
            Files.setAttribute(p, "unix:gid", (int) gid, NOFOLLOW);
            Files.setAttribute(p, "unix:uid", (int) uid, NOFOLLOW);
        }
        if (mode >= 0) Files.setAttribute(p, "unix:mode", mode); // after chown, which clears setuid/setgid bits
        if (e.getLastModifiedTime() != null) {
            try {
                Files.getFileAttributeView(p, java.nio.file.attribute.BasicFileAttributeView.class, NOFOLLOW)
                        .setTimes(FileTime.from(e.getLastModifiedTime().toInstant()), null, null);
            } catch (IOException ignored) {
                // times are cosmetic
            }
        }
    }

    static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** {@code sha256:<hex>} of a file. */
    static String digestOf(Path file) throws IOException {
        MessageDigest md = sha256();
        try (InputStream in = Files.newInputStream(file)) {
            byte[] buf = new byte[1 << 16];
            int r;
            while ((r = in.read(buf)) > 0) md.update(buf, 0, r);
        }
        return "sha256:" + HexFormat.of().formatHex(md.digest());
    }
}
