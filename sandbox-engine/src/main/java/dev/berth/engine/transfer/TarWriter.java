package dev.berth.engine.transfer;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

/**
 * Writes a POSIX (ustar + pax) tar stream of a {@link SourceTree}: directories, regular files and links, owner 0,
 * permission bits only. Long names and sizes go into pax records (GNU tar and busybox tar read them). A file is opened
 * without following a link and carries exactly the size scanned: one that grew is cut, one that shrank is padded, so
 * the stream always matches its headers. Computes the SHA-256 of everything written. Not thread-safe.
 */
final class TarWriter {
    private static final int BLOCK = 512;
    private final OutputStream out;
    private final MessageDigest sha;
    private final byte[] buf = new byte[256 * 1024];
    private long written;

    TarWriter(OutputStream out) {
        this.out = out;
        try {
            this.sha = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Writes every entry of {@code tree}, then the end-of-archive blocks. */
    void write(SourceTree tree) throws IOException {
        for (SourceTree.Entry e : tree.entries) {
            switch (e.type()) {
                case DIR -> header(e.path() + "/", '5', 0, e.mode(), e.mtimeSeconds(), null);
                case LINK -> header(e.path(), '2', 0, 0777, e.mtimeSeconds(), e.linkTarget());
                case FILE -> file(tree.root.resolve(e.path()), e);
            }
        }
        emit(new byte[BLOCK * 2], BLOCK * 2);
        out.flush();
    }

    long bytesWritten() { return written; }

    String sha256() { return java.util.HexFormat.of().formatHex(sha.digest()); }

    private void file(Path p, SourceTree.Entry e) throws IOException {
        header(e.path(), '0', e.size(), e.mode(), e.mtimeSeconds(), null);
        long left = e.size();
        // a file replaced by a pipe since the scan would block the open: check again right before it (narrows the race)
        if (Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS)) {
            try (InputStream in = Files.newInputStream(p, StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS)) {
                while (left > 0) {
                    int n = in.read(buf, 0, (int) Math.min(buf.length, left));
                    if (n < 0) break;
                    emit(buf, n);
                    left -= n;
                }
            } catch (java.nio.file.FileSystemException gone) {
                // removed or replaced by a link since the scan: carried as zeros of the scanned size
            }
        }
        while (left > 0) {
            int n = (int) Math.min(buf.length, left);
            java.util.Arrays.fill(buf, 0, n, (byte) 0);
            emit(buf, n);
            left -= n;
        }
        pad(e.size());
    }

    private void header(String name, char type, long size, int mode, long mtime, String link) throws IOException {
        byte[] nameBytes = name.getBytes(StandardCharsets.UTF_8);
        byte[] linkBytes = link == null ? new byte[0] : link.getBytes(StandardCharsets.UTF_8);
        boolean bigSize = size > 077777777777L;
        if (nameBytes.length > 100 || linkBytes.length > 100 || bigSize) {
            StringBuilder pax = new StringBuilder();
            if (nameBytes.length > 100) pax.append(record("path", name));
            if (linkBytes.length > 100) pax.append(record("linkpath", link));
            if (bigSize) pax.append(record("size", Long.toString(size)));
            byte[] body = pax.toString().getBytes(StandardCharsets.UTF_8);
            emit(block("././@PaxHeader".getBytes(StandardCharsets.UTF_8), 'x', body.length, 0644, mtime, new byte[0], 0), BLOCK);
            emit(body, body.length);
            pad(body.length);
        }
        emit(block(nameBytes, type, bigSize ? 0 : size, mode, mtime, linkBytes, 0), BLOCK);
    }

    /** One pax record: "len key=value\n", where len counts the whole record including its own digits. */
    static String record(String key, String value) {
        int body = key.length() + 1 + value.getBytes(StandardCharsets.UTF_8).length + 1 + 1;
        int len = body + Integer.toString(body).length();
        if (Integer.toString(len).length() != Integer.toString(body).length()) len++;
        return len + " " + key + "=" + value + "\n";
    }

    private static byte[] block(byte[] name, char type, long size, int mode, long mtime, byte[] link, int unused) {
        byte[] h = new byte[BLOCK];
        System.arraycopy(name, 0, h, 0, Math.min(100, name.length));
        octal(h, 100, 8, mode & 07777);
        octal(h, 108, 8, 0);
        octal(h, 116, 8, 0);
        octal(h, 124, 12, size);
        octal(h, 136, 12, Math.min(mtime, 077777777777L));
        java.util.Arrays.fill(h, 148, 156, (byte) ' ');
        h[156] = (byte) type;
        System.arraycopy(link, 0, h, 157, Math.min(100, link.length));
        System.arraycopy("ustar\0".getBytes(StandardCharsets.US_ASCII), 0, h, 257, 6);
        h[263] = '0';
        h[264] = '0';
        System.arraycopy("root".getBytes(StandardCharsets.US_ASCII), 0, h, 265, 4);
        System.arraycopy("root".getBytes(StandardCharsets.US_ASCII), 0, h, 297, 4);
        long sum = 0;
        for (byte b : h) sum += b & 0xff;
        octal(h, 148, 7, sum);
        h[155] = ' ';
        return h;
    }

    /** {@code len - 1} octal digits and a NUL. */
    private static void octal(byte[] h, int off, int len, long v) {
        String s = Long.toOctalString(v);
        int digits = len - 1;
        if (s.length() > digits) throw new IllegalArgumentException(v + " does not fit a tar header field");
        for (int i = 0; i < digits - s.length(); i++) h[off + i] = '0';
        System.arraycopy(s.getBytes(StandardCharsets.US_ASCII), 0, h, off + digits - s.length(), s.length());
        h[off + digits] = 0;
    }

    private void pad(long size) throws IOException {
        int r = (int) (size % BLOCK);
        if (r != 0) emit(new byte[BLOCK - r], BLOCK - r);
    }

    private void emit(byte[] b, int n) throws IOException {
        out.write(b, 0, n);
        sha.update(b, 0, n);
        written += n;
    }
}
