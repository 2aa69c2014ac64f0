package dev.berth.engine.audit;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;
import java.util.function.LongSupplier;

/**
 * The length of one audit log's file: the zero-filled preallocated stretch of a version 2 log, kept ahead of the
 * records, and cutting the file back after a failed write.
 *
 * <p>Thread-safe: the length changes only under this object's {@code alloc} lock, which comes after the log's
 * {@code write} and {@code sync} locks in the lock order.
 */
final class LogSpace {
    private static final System.Logger LOG = System.getLogger("berth.audit");

    private final String name;
    private final LogChannels channels;
    private final boolean preallocate;
    private final ReentrantLock alloc = new ReentrantLock();
    private volatile long allocated; // the file's length, zero-filled past the written records

    LogSpace(String name, LogChannels channels, boolean preallocate, long allocated) {
        this.name = name;
        this.channels = channels;
        this.preallocate = preallocate;
        this.allocated = allocated;
    }

    /** Whether this log is preallocated (version 2 and later). */
    boolean preallocated() { return preallocate; }

    /**
     * Writes zeros from {@code from} up to {@code length} (not merely allocates: an unwritten extent would turn an
     * overwrite into a metadata change again) and returns the new length, or {@code from} if it is already as long.
     */
    static long zeroFill(FileChannel c, long from, long length) throws IOException {
        if (length <= from) return from;
        ByteBuffer zeros = ByteBuffer.allocate((int) Math.min(length - from, AuditLog.PREALLOC_CHUNK));
        for (long at = from; at < length; ) {
            zeros.clear().limit((int) Math.min(zeros.capacity(), length - at));
            while (zeros.hasRemaining()) at += c.write(zeros, at);
        }
        return length;
    }

    /** Whether less than half a chunk of the stretch is left past {@code writtenSize}. */
    boolean lowOn(long writtenSize) {
        return preallocate && allocated - writtenSize < AuditLog.PREALLOC_CHUNK / 2;
    }

    /**
     * A batch would go past the preallocated stretch (a burst faster than the flusher, or the first records after an
     * open): zeros are written up to it first, without an fsync (the caller's own fsync then pays the metadata once),
     * so records are only ever written below {@code allocated} and the flusher's zeros never land on one.
     */
    void growTo(long need) throws IOException {
        if (need <= allocated) return;
        alloc.lock();
        try {
            long target = (need + 0xFFFF) & ~0xFFFFL;
            channels.uninterruptibly(false, c -> {
                allocated = zeroFill(c, allocated, target);
                return 0L;
            });
        } finally {
            alloc.unlock();
        }
    }

    /**
     * Keeps the preallocated stretch ahead of the records (the flusher's job, after its fsyncs): when less than half a
     * chunk is left, adds a chunk of zeros and fsyncs it, so the callers' own fsyncs overwrite known blocks.
     */
    void extendAhead(BooleanSupplier closed, LongSupplier writtenSize) {
        alloc.lock();
        try {
            if (closed.getAsBoolean() || !lowOn(writtenSize.getAsLong())) return;
            long target = allocated + AuditLog.PREALLOC_CHUNK;
            channels.uninterruptibly(false, c -> {
                allocated = zeroFill(c, allocated, target);
                c.force(false);
                return 0L;
            });
        } catch (IOException e) {
            // a full disk: records are appended past the stretch, as in version 1, until there is room again
            LOG.log(System.Logger.Level.WARNING, "audit log '" + name + "': cannot preallocate (" + e + ")");
        } finally {
            alloc.unlock();
        }
    }

    /** After a failed write: cuts the file back to {@code size}, the end of the last complete write. */
    void cutBackTo(long size) throws IOException {
        alloc.lock();
        try {
            channels.uninterruptibly(false, c -> c.size() > size ? c.truncate(size).size() : 0L);
            allocated = Math.min(allocated, size);
        } finally {
            alloc.unlock();
        }
    }

    /**
     * Closes the log's channels; a clean close ({@code cleanEnd} >= 0: every write fsynced) first cuts the zero tail
     * off, and the next open preallocates again. The caller holds the log's {@code write} and {@code sync} locks.
     */
    void close(long cleanEnd) {
        alloc.lock();
        try {
            if (preallocate && cleanEnd >= 0) {
                try {
                    channels.log().truncate(cleanEnd);
                } catch (IOException e) {
                    LOG.log(System.Logger.Level.WARNING, "audit log '" + name + "': zero tail not cut at close (" + e + ")");
                }
            }
            channels.close();
        } finally {
            alloc.unlock();
        }
    }
}
