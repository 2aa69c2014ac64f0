package dev.berth.engine.audit;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;

/**
 * Opening an audit log's file: writes the header of a new one, or finds the last complete record of an existing one
 * and cuts off a tail a crash interrupted. Runs once, before the log is shared.
 */
final class LogRecovery {
    private LogRecovery() {}

    /**
     * What opening found.
     *
     * @param seq         the last complete record (0: none yet)
     * @param hash        its hash (for seq 0 the SHA-256 of the header line)
     * @param size        the end of the last complete record
     * @param preallocate whether the log is preallocated (version 2 and later)
     * @param allocated   the file's length, zero-filled past {@code size}
     * @param dropped     the bytes of an interrupted tail that was cut off, or null
     */
    record Result(long seq, String hash, long size, boolean preallocate, long allocated, byte[] dropped) {}

    /** Reads the header and the last complete record; cuts off an interrupted tail and reports its bytes. */
    static Result recover(FileChannel ch, Path file, String name, ServerKey key) throws IOException, AuditException {
        long size = ch.size();
        if (size == 0) {
            byte[] header = AuditFormat.header(name, key.keyId());
            ByteBuffer b = ByteBuffer.allocate(header.length + 1).put(header).put((byte) '\n').flip();
            while (b.hasRemaining()) ch.write(b, ch.size());
            long allocated = header.length + 1L;
            // zero-filled and fsynced with the header, before any record
            allocated = LogSpace.zeroFill(ch, allocated, allocated + AuditLog.PREALLOC_CHUNK);
            ch.force(true);
            return new Result(0, Canonical.sha256(header), header.length + 1L, true, allocated, null);
        }
        byte[] first = readAt(ch, 0, (int) Math.min(size, 4096));
        int nl = AuditFormat.indexOf(first, (byte) '\n', 0);
        if (nl < 0) throw new AuditException("the audit log " + file + " has no complete header line; it is not a Berth audit log or was cut short");
        byte[] header = Arrays.copyOf(first, nl);
        Map<String, Object> h = AuditFormat.checkHeader(header, file);
        boolean preallocate = ((Number) h.get("version")).intValue() >= AuditLog.PREALLOC_VERSION;
        long allocated = size;
        if (preallocate) size = contentEnd(ch, size);
        // the last complete line and anything after it
        int window = (int) Math.min(size, 2L * AuditLog.MAX_RECORD + 2);
        long start = size - window;
        byte[] tail = readAt(ch, start, window);
        if (preallocate) {
            // a power loss can leave zeroed holes in writes that were never fsynced: the records from the first
            // line with a NUL byte on are such a torn tail (fsynced records never contain one)
            int nul = AuditFormat.indexOf(tail, (byte) 0, 0);
            if (nul >= 0) tail = Arrays.copyOf(tail, nul);
        }
        int end = AuditFormat.lastIndexOf(tail, (byte) '\n', tail.length - 1);   // end of the last complete line
        byte[] dropped = null;
        long goodSize = start + end + 1;
        if (goodSize < size) dropped = readAt(ch, goodSize, (int) Math.min(size - goodSize, 16L * AuditLog.MAX_RECORD));
        long seq;
        String hash;
        if (start + end == nl) {            // only the header is complete
            seq = 0;
            hash = Canonical.sha256(header);
        } else {
            int lineStart = AuditFormat.lastIndexOf(tail, (byte) '\n', end - 1) + 1;
            if (lineStart == 0 && start > 0) throw new AuditException("the last record of " + file + " is longer than " + AuditLog.MAX_RECORD + " bytes");
            Map<String, Object> last;
            try {
                last = Canonical.decodeObject(Arrays.copyOfRange(tail, lineStart, end));
            } catch (IllegalArgumentException e) {
                throw new AuditException("the last record of " + file + " is unreadable (" + e.getMessage()
                        + "); `berth audit verify` says where the log breaks");
            }
            if (!(last.get("seq") instanceof Number n) || !(last.get("hash") instanceof String hh)) {
                throw new AuditException("the last record of " + file + " has no seq/hash; `berth audit verify` says where the log breaks");
            }
            seq = n.longValue();
            hash = hh;
        }
        if (dropped != null) {
            ch.truncate(goodSize);
            allocated = goodSize;
        }
        if (preallocate && allocated - goodSize < AuditLog.PREALLOC_CHUNK / 2) {
            allocated = LogSpace.zeroFill(ch, allocated, allocated + AuditLog.PREALLOC_CHUNK);
        }
        if (dropped != null || allocated > size) ch.force(true);
        return new Result(seq, hash, goodSize, preallocate, allocated, dropped);
    }

    /** Length of the file without its zero-filled tail. */
    private static long contentEnd(FileChannel ch, long size) throws IOException {
        long pos = size;
        while (pos > 0) {
            int n = (int) Math.min(pos, 1 << 16);
            byte[] b = readAt(ch, pos - n, n);
            for (int i = b.length - 1; i >= 0; i--) if (b[i] != 0) return pos - n + i + 1;
            pos -= n;
        }
        return 0;
    }

    private static byte[] readAt(FileChannel ch, long pos, int len) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(len);
        while (b.hasRemaining()) {
            int n = ch.read(b, pos + b.position());
            if (n < 0) break;
        }
        return Arrays.copyOf(b.array(), b.position());
    }
}
