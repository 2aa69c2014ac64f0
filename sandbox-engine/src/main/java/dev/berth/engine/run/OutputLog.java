package dev.berth.engine.run;

/**
 * The last {@code capacity} bytes of a background process's stream, addressed by absolute offset, so a reader can
 * continue where it left off and learns how much it missed if it fell behind. Thread-safe.
 */
final class OutputLog {
    private final byte[] ring;
    private long total;

    OutputLog(int capacity) { this.ring = new byte[capacity]; }

    synchronized void append(byte[] data) {
        for (byte b : data) {
            ring[(int) (total % ring.length)] = b;
            total++;
        }
    }

    synchronized long total() { return total; }

    /** Bytes from {@code since} (clamped to what is still kept) up to at most {@code max} bytes. */
    synchronized Slice read(long since, int max) {
        long from = Math.max(Math.max(0, since), total - ring.length);
        long to = Math.min(total, from + max);
        byte[] out = new byte[(int) (to - from)];
        for (long i = from; i < to; i++) out[(int) (i - from)] = ring[(int) (i % ring.length)];
        return new Slice(out, from, to, Math.max(0, from - Math.max(0, since)));
    }

    /** {@code dropped}: bytes between the requested offset and the oldest kept byte, lost to the ring. */
    record Slice(byte[] data, long from, long next, long dropped) {}
}
