package dev.berth.engine.audit;

import java.io.IOException;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;

/**
 * The head file of one audit log: the last fsynced position, signed with the server key, rewritten in place.
 *
 * <p>Thread-safe: rewrites are serialized by a lock of its own, so no caller waiting for an fsync waits for a
 * signature.
 */
final class SignedHead {
    private static final System.Logger LOG = System.getLogger("berth.audit");

    private final String name;
    private final ServerKey key;
    private final LogChannels channels;
    private final ReentrantLock lock = new ReentrantLock();
    private AuditLog.Mark written; // guarded by lock: the mark the head file was last written for

    SignedHead(String name, ServerKey key, LogChannels channels) {
        this.name = name;
        this.key = key;
        this.channels = channels;
    }

    /**
     * Brings the head up to {@code durable} if it lags. {@code durable} is read under the lock, so a slower caller
     * cannot write an older mark over a newer one, and it only moves after an fsync, so the head cannot lead the log.
     */
    void update(Supplier<AuditLog.Mark> durable) {
        lock.lock();
        try {
            AuditLog.Mark d = durable.get();
            if (d.equals(written)) return;
            try {
                write(d);
                written = d;
            } catch (IOException e) {
                LOG.log(System.Logger.Level.WARNING, "audit log '" + name + "': head not updated (" + e + "); verify can then"
                        + " not tell a truncation past record " + d.seq() + " from a crash");
            }
        } finally {
            lock.unlock();
        }
    }

    private void write(AuditLog.Mark m) throws IOException {
        var b = AuditFormat.head(name, m.seq(), m.hash(), key);
        channels.uninterruptibly(true, c -> {
            b.rewind();
            while (b.hasRemaining()) c.write(b, b.position());
            return 0L;
        });
    }
}
