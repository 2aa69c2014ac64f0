package dev.berth.engine.spi;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.zip.CRC32C;

/**
 * Versioned, checksummed, atomically written metadata files: the one record format and the one atomic write of
 * Berth's home (workspace and snapshot records, the microVM driver's machine specs, park manifests).
 *
 * <p>Format: one header line {@code BERTH <kind> <version> <crc32c-hex> <body-length>\n} followed by a UTF-8 JSON
 * body of exactly that length. Reads are capped at {@link #MAX_BYTES}; a file with the wrong magic, kind, version,
 * length or checksum is refused with a message naming the file, never half-read.
 *
 * <p>Writes go to a temporary file in the same directory, are fsynced, renamed over the target and the directory is
 * fsynced, so a crash (or {@code kill -9}) leaves either the old or the new file, never a torn one.
 */
public final class MetaFile {
    public static final int MAX_BYTES = 1 << 20;

    private MetaFile() {}

    public static void write(Path file, String kind, int version, String json) throws IOException {
        write(file, kind, version, json, true);
    }

    /**
     * Like {@link #write(Path, String, int, String)}; with {@code syncDirectory} false the rename is left to a later
     * directory fsync (the caller writes another file into the same directory with {@link #write} before anything
     * depends on this one: that fsync makes both names durable). Saves one flush where that is true.
     */
    public static void write(Path file, String kind, int version, String json, boolean syncDirectory) throws IOException {
        byte[] body = json.getBytes(StandardCharsets.UTF_8);
        CRC32C crc = new CRC32C();
        crc.update(body);
        String header = "BERTH " + kind + " " + version + " " + String.format("%08x", crc.getValue()) + " " + body.length + "\n";
        byte[] head = header.getBytes(StandardCharsets.US_ASCII);
        Path dir = file.toAbsolutePath().getParent();
        Files.createDirectories(dir);
        Path tmp = dir.resolve("." + file.getFileName() + ".tmp");
        try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING)) {
            ch.write(ByteBuffer.wrap(head));
            ch.write(ByteBuffer.wrap(body));
            ch.force(true);
        }
        try {
            Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (AtomicMoveNotSupportedException e) {
            Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING);
        }
        if (!syncDirectory) return;
        try (FileChannel d = FileChannel.open(dir, StandardOpenOption.READ)) {
            d.force(true);
        } catch (IOException ignored) {
            // some filesystems refuse fsync on directories; the rename is still atomic
        }
    }

    /** The format version in {@code file}'s header (0 when it is not a Berth metadata file). */
    public static int version(Path file) throws IOException {
        try (var in = Files.newInputStream(file)) {
            String[] h = new String(in.readNBytes(200), StandardCharsets.US_ASCII).split("\n", 2)[0].split(" ");
            if (h.length != 5 || !h[0].equals("BERTH")) return 0;
            try {
                return Integer.parseInt(h[2]);
            } catch (NumberFormatException e) {
                return 0;
            }
        }
    }

    /** Whether {@code file} starts like a Berth metadata file (to tell it from an older, plain-JSON format). */
    public static boolean looksLikeMetaFile(Path file) throws IOException {
        try (var in = Files.newInputStream(file)) {
            byte[] b = in.readNBytes(6);
            return new String(b, StandardCharsets.US_ASCII).equals("BERTH ");
        }
    }

    /** Returns the JSON body, or throws with the reason the file cannot be trusted. */
    public static String read(Path file, String kind, int version) throws IOException {
        return read(file, kind, version, version);
    }

    /** Like {@link #read(Path, String, int)}, accepting any format version from {@code oldest} to {@code newest}. */
    public static String read(Path file, String kind, int oldest, int newest) throws IOException {
        long size = Files.size(file);
        if (size > MAX_BYTES) throw new IOException(file + ": " + size + " bytes is larger than the limit of " + MAX_BYTES);
        byte[] all = Files.readAllBytes(file);
        int nl = -1;
        for (int i = 0; i < Math.min(all.length, 200); i++) if (all[i] == '\n') { nl = i; break; }
        if (nl < 0) throw new IOException(file + ": no header line");
        String[] h = new String(all, 0, nl, StandardCharsets.US_ASCII).split(" ");
        if (h.length != 5 || !h[0].equals("BERTH")) throw new IOException(file + ": not a Berth metadata file");
        if (!h[1].equals(kind)) throw new IOException(file + ": holds a '" + h[1] + "' record, expected '" + kind + "'");
        int v;
        int len;
        long crcExpected;
        try {
            v = Integer.parseInt(h[2]);
            crcExpected = Long.parseLong(h[3], 16);
            len = Integer.parseInt(h[4]);
        } catch (NumberFormatException e) {
            throw new IOException(file + ": malformed header '" + String.join(" ", h) + "'");
        }
        if (v < oldest || v > newest) {
            throw new IOException(file + ": format version " + v + " is not supported (this build reads "
                    + (oldest == newest ? String.valueOf(newest) : oldest + " to " + newest) + ")");
        }
        if (len != all.length - nl - 1) throw new IOException(file + ": body is " + (all.length - nl - 1) + " bytes, header says " + len + " (truncated?)");
        CRC32C crc = new CRC32C();
        crc.update(all, nl + 1, len);
        if (crc.getValue() != crcExpected) throw new IOException(file + ": checksum mismatch (file is corrupt)");
        return new String(all, nl + 1, len, StandardCharsets.UTF_8);
    }
}
