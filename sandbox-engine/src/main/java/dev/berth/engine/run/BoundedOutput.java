package dev.berth.engine.run;

import java.nio.charset.StandardCharsets;

/**
 * Keeps the head and the tail of a stream of bytes within a fixed budget, counts the total and digests all of it, so a command that
 * prints gigabytes costs a bounded amount of memory while the agent still sees how it started and how it ended.
 * Thread-safe.
 */
final class BoundedOutput {
    private final int headCap;
    private final byte[] head;
    private int headLen;
    private final byte[] tail;
    private int tailStart;   // ring buffer start
    private int tailLen;
    private long total;
    private final java.security.MessageDigest sha = dev.berth.engine.audit.Canonical.newSha256();

    BoundedOutput(int limit) {
        if (limit < 2) throw new IllegalArgumentException("limit must be at least 2 bytes, was " + limit);
        this.headCap = limit / 2;
        this.head = new byte[headCap];
        this.tail = new byte[limit - headCap];
    }

    synchronized void append(byte[] data) {
        total += data.length;
        sha.update(data);
        int off = 0;
        if (headLen < headCap) {
            int n = Math.min(headCap - headLen, data.length);
            System.arraycopy(data, 0, head, headLen, n);
            headLen += n;
            off = n;
        }
        for (int i = off; i < data.length; i++) {
            if (tailLen < tail.length) {
                tail[(tailStart + tailLen) % tail.length] = data[i];
                tailLen++;
            } else {
                tail[tailStart] = data[i];
                tailStart = (tailStart + 1) % tail.length;
            }
        }
    }

    synchronized long totalBytes() { return total; }

    /** Hex SHA-256 of everything appended, kept or not; call once, at the end. */
    synchronized String sha256() { return java.util.HexFormat.of().formatHex(sha.digest()); }

    synchronized boolean truncated() { return total > headLen + tailLen; }

    /** The kept bytes as text; if bytes were dropped, a marker in the middle says how many. */
    synchronized String text() {
        byte[] t = new byte[tailLen];
        for (int i = 0; i < tailLen; i++) t[i] = tail[(tailStart + i) % tail.length];
        String h = new String(head, 0, headLen, StandardCharsets.UTF_8);
        String tl = new String(t, StandardCharsets.UTF_8);
        long omitted = total - headLen - tailLen;
        if (omitted <= 0) return h + tl;
        return h + "\n[... berth: " + omitted + " bytes omitted; " + total + " bytes in all ...]\n" + tl;
    }
}
