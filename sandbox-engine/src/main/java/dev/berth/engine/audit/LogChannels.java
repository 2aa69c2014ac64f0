package dev.berth.engine.audit;

import java.io.IOException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.function.BooleanSupplier;

/**
 * The open channels of one audit log and its head file, kept usable across interrupts.
 *
 * <p>Thread-safe: a channel closed by an interrupt is swapped for a new one under this object's monitor.
 */
final class LogChannels {
    /** An operation on a channel; positional and idempotent, since it may be done again on a reopened channel. */
    interface ChannelOp {
        long apply(FileChannel c) throws IOException;
    }

    private final Path file;
    private final Path headFile;
    private final BooleanSupplier closed;
    private volatile FileChannel ch;
    private volatile FileChannel headCh;

    /** @param closed whether the log is closed, after which a closed channel stays closed */
    LogChannels(Path file, Path headFile, FileChannel ch, FileChannel headCh, BooleanSupplier closed) {
        this.file = file;
        this.headFile = headFile;
        this.ch = ch;
        this.headCh = headCh;
        this.closed = closed;
    }

    /** The log's channel as it is now; for callers that hold every lock of the log (close). */
    FileChannel log() { return ch; }

    /**
     * Runs a file operation so that an interrupt of the calling thread cannot break the log. A {@link FileChannel} is
     * closed when a thread blocked in it is interrupted, and MCP cancellation interrupts the handler's thread: the
     * interrupt status is set aside during the operation (and restored after), and a channel closed by an interrupt
     * that came anyway (or by another thread's interrupt) is reopened and the operation, positional and idempotent,
     * done again.
     */
    long uninterruptibly(boolean head, ChannelOp op) throws IOException {
        boolean interrupted = Thread.interrupted();
        try {
            for (int attempt = 0; ; attempt++) {
                FileChannel c = head ? headCh : ch;
                try {
                    return op.apply(c);
                } catch (ClosedChannelException e) {
                    interrupted |= Thread.interrupted();
                    if (closed.getAsBoolean() || attempt >= 3) throw e;
                    reopen(head, c);
                }
            }
        } finally {
            if (interrupted) Thread.currentThread().interrupt();
        }
    }

    private synchronized void reopen(boolean head, FileChannel broken) throws IOException {
        if (head && headCh == broken) {
            headCh = FileChannel.open(headFile, StandardOpenOption.READ, StandardOpenOption.WRITE);
        } else if (!head && ch == broken) {
            ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE);
        }
    }

    /** Closes both channels, quietly. */
    void close() {
        closeQuietly(ch);
        closeQuietly(headCh);
    }

    static void closeQuietly(FileChannel c) {
        if (c == null) return;
        try {
            c.close();
        } catch (IOException ignored) {
            // closing after a failure: the first error has been reported
        }
    }
}
