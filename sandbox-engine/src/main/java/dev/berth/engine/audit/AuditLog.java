package dev.berth.engine.audit;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.ReentrantLock;

/**
 * One append-only, hash-chained audit log (one per tenant, plus one for the server's own events).
 *
 * <p>File format, version {@value #VERSION}: the first line is a header object ({@code format}, {@code version},
 * {@code log}, {@code created}, {@code key_id}); every further line is one record in {@link Canonical} JSON with
 * {@code seq} (1, 2, ...), {@code time}, {@code type}, {@code prev} (the previous record's {@code hash}; for seq 1 the
 * SHA-256 of the header line) and {@code hash} = SHA-256 of the record's canonical encoding without {@code hash}.
 * Beside it, a fixed-size <em>head</em> file holds the last fsynced position signed with the server key, so records
 * cut off the end, or a chain rewritten wholesale, are told apart from a write a crash interrupted.
 *
 * <p>Thread-safe. Implementation notes: appending takes the object's monitor only to number, chain and queue the
 * record; writing takes {@code write}, fsyncing takes {@code sync}, so a write never waits for an fsync in progress.
 * A caller that needs durability writes everything queued so far and fsyncs once, so concurrent callers share one
 * fsync (group commit): whoever gets {@code sync} first makes durable all that was written before it. A failed write
 * cuts the file back to the last complete write and rewinds the chain to it; records queued after that point are
 * reported lost to their callers (and in the server log), and the next append tries again. A failed fsync stops the
 * log for good (until a restart): what reached the disk is then unknown. The head is rewritten in place by the
 * flusher (and on close) after fsyncs, without an fsync of its own, so no caller waits for its signature: it lags
 * the log by up to one flusher pass, and further after a power loss (then a truncation past it goes unnoticed), and
 * never leads it.
 *
 * <p>Version 2 logs are <em>preallocated</em>: the file is kept ahead of its records by a zero-filled, already
 * fsynced stretch ({@value #PREALLOC_CHUNK} bytes at a time, extended by the flusher before it runs out), and records
 * overwrite it. An fdatasync of an overwrite changes no metadata (no new blocks, no new size), so it is a data flush
 * and a cache flush, not a commit of the filesystem's journal with whatever else is pending; that commit is most of
 * what an fsync cost on a run's path (SPECIFICATION "Evidence"). Readers stop at the first NUL byte (canonical JSON
 * never contains one); everything after it must be NUL. A clean close cuts the zero tail off; a crash leaves it.
 * Version 1 logs (written before) are appended to as before, without preallocation.
 *
 * <p>This class numbers, chains, writes and fsyncs records (the group commit above); the jobs around it live beside
 * it: the encodings in {@code AuditFormat}, opening and crash recovery in {@code LogRecovery}, the file's length and
 * preallocation in {@code LogSpace}, the signed head in {@code SignedHead}, interrupt-proof channels in
 * {@code LogChannels}.
 */
public final class AuditLog implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger("berth.audit");
    public static final String FORMAT = "berth-audit";
    public static final int VERSION = 2;
    /** First version whose files may end in a zero-filled preallocated stretch. */
    static final int PREALLOC_VERSION = 2;
    /** Bytes added to a preallocated log at a time; the flusher extends it when less than half of this is left. */
    static final int PREALLOC_CHUNK = 1 << 20;
    /** Bytes of the head file, padded, so it can be rewritten in place with one positional write. */
    static final int HEAD_SIZE = 512;
    /** Largest record accepted; callers cap long fields (commands, paths) and record their digest instead. */
    public static final int MAX_RECORD = 64 * 1024;

    /** Where a record sits in its log: enough to find it and check it against the chain. */
    public record Position(String log, long seq, String hash) {
        public Map<String, Object> toJson() {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("log", log);
            m.put("seq", seq);
            m.put("hash", hash);
            return m;
        }
    }

    private record Pending(long seq, String hash, byte[] line, int epoch) {}

    /** A point in the file: the last record written up to it, and the length. */
    record Mark(long seq, String hash, long size) {}

    private final String name;
    private final Path file;
    private final Runnable wake;
    private final LogChannels channels;
    private final LogSpace space;
    private final SignedHead head; // lags durable by up to one flusher pass

    // guarded by this
    private long lastSeq;
    private String lastHash;
    private final ArrayDeque<Pending> pending = new ArrayDeque<>();
    private int epoch;
    private boolean closed;

    // guarded by write (written is also read, without it, by syncers)
    private final ReentrantLock write = new ReentrantLock();
    private volatile Mark written;
    // guarded by sync (durable is also read under write, to roll back to it); lock order: write, then sync
    private final ReentrantLock sync = new ReentrantLock();
    private volatile Mark durable;
    private volatile String broken; // non-null: the file is in an unknown state; refuse everything

    private AuditLog(String name, Path file, Path headFile, ServerKey key, FileChannel ch, FileChannel headCh, Runnable wake,
                     LogRecovery.Result r) {
        this.name = name;
        this.file = file;
        this.wake = wake;
        this.channels = new LogChannels(file, headFile, ch, headCh, this::closedNow);
        this.space = new LogSpace(name, channels, r.preallocate(), r.allocated());
        this.head = new SignedHead(name, key, channels);
        lastSeq = r.seq();
        lastHash = r.hash();
        written = durable = new Mark(r.seq(), r.hash(), r.size());
    }

    /**
     * Opens (or creates) the log {@code name} at {@code file}. An interrupted last line (a crash mid-write) is cut off
     * and recorded as a {@code tail_recovered} record naming its length and digest, so nothing vanishes silently.
     *
     * @param wake called when a {@link Durability#QUEUED} record waits for the flusher
     */
    public static AuditLog open(String name, Path file, ServerKey key, Runnable wake) throws AuditException {
        Path headFile = AuditFormat.headOf(file);
        FileChannel ch = null;
        FileChannel headCh = null;
        try {
            Files.createDirectories(file.getParent());
            ch = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.READ, StandardOpenOption.WRITE);
            headCh = FileChannel.open(headFile, StandardOpenOption.CREATE, StandardOpenOption.READ, StandardOpenOption.WRITE);
            LogRecovery.Result r = LogRecovery.recover(ch, file, name, key);
            AuditLog log = new AuditLog(name, file, headFile, key, ch, headCh, wake, r);
            byte[] dropped = r.dropped();
            if (dropped != null) {
                Map<String, Object> f = new LinkedHashMap<>();
                f.put("dropped_bytes", dropped.length);
                f.put("dropped_sha256", Canonical.sha256(dropped));
                f.put("note", "the last line was incomplete when the log was opened (a write interrupted by a crash)"
                        + " and was cut off; the chain continues from the last complete record");
                log.append("tail_recovered", f, Durability.DURABLE);
            }
            return log;
        } catch (IOException e) {
            LogChannels.closeQuietly(ch);
            LogChannels.closeQuietly(headCh);
            throw new AuditException("cannot open the audit log '" + name + "' at " + file + ": " + e, e);
        } catch (AuditException e) {
            LogChannels.closeQuietly(ch);
            LogChannels.closeQuietly(headCh);
            throw e;
        }
    }

    /**
     * Keeps the preallocated stretch ahead of the records (the flusher's job, after its fsyncs): when less than half a
     * chunk is left, adds a chunk of zeros and fsyncs it, so the callers' own fsyncs overwrite known blocks.
     */
    public void extendAhead() {
        if (broken != null || !space.lowOn(written.size())) return;
        space.extendAhead(this::closedNow, () -> written.size());
    }

    private synchronized boolean closedNow() { return closed; }

    public String name() { return name; }

    public Path file() { return file; }

    /**
     * Appends a record. {@code fields} must not use {@code seq}, {@code time}, {@code type}, {@code prev} or {@code hash}.
     *
     * @throws AuditException if the record could not be written (or made durable) as {@code durability} asks; the
     *                        record is then not in the log
     */
    public Position append(String type, Map<String, Object> fields, Durability durability) throws AuditException {
        Pending p;
        synchronized (this) {
            if (closed) throw new AuditException("the audit log '" + name + "' is closed (the server is shutting down)");
            long seq = lastSeq + 1;
            AuditFormat.Encoded rec = AuditFormat.record(type, fields, seq, lastHash);
            p = new Pending(seq, rec.hash(), rec.line(), epoch);
            pending.add(p);
            lastSeq = seq;
            lastHash = rec.hash();
        }
        switch (durability) {
            case QUEUED -> wake.run();
            case WRITTEN -> {
                commit(p, false);
                wake.run(); // the flusher fsyncs it soon, unless the caller's own durable record comes first
            }
            case DURABLE -> commit(p, true);
        }
        return new Position(name, p.seq, p.hash);
    }

    /** Returns once the record at {@code pos} (written earlier by this log) is fsynced. */
    public void awaitDurable(Position pos) throws AuditException {
        if (broken != null) throw new AuditException(broken);
        if (durable.seq() >= pos.seq()) return;
        int e;
        synchronized (this) {
            e = epoch;
        }
        syncTo(new Pending(pos.seq(), pos.hash(), null, e));
    }

    /** Writes and fsyncs everything queued so far, then brings the signed head up to it (the flusher's job). */
    public void flush() throws AuditException {
        Pending last;
        synchronized (this) {
            last = pending.peekLast();
        }
        if (last != null) commit(last, true);
        if (broken == null) head.update(() -> durable);
    }

    private void commit(Pending p, boolean fsync) throws AuditException {
        if (broken != null) throw new AuditException(broken);
        if (written.seq() < p.seq()) writeQueued(p);
        if (!stillThere(p)) throw lost(p);
        if (fsync && durable.seq() < p.seq()) syncTo(p);
    }

    /** Writes everything queued (p among it), without waiting for an fsync in progress. */
    private void writeQueued(Pending p) throws AuditException {
        write.lock();
        try {
            if (broken != null) throw new AuditException(broken);
            if (written.seq() >= p.seq() || !stillThere(p)) return;
            List<Pending> batch;
            synchronized (this) {
                batch = new ArrayList<>(pending);
                pending.clear();
            }
            if (batch.isEmpty()) return;
            long start = written.size();
            long pos;
            try {
                if (space.preallocated()) {
                    long need = start;
                    for (Pending q : batch) need += q.line().length;
                    space.growTo(need);
                }
                pos = channels.uninterruptibly(false, c -> {
                    long at = start; // positional: a retry after an interrupt writes the same bytes at the same place
                    for (Pending q : batch) {
                        ByteBuffer b = ByteBuffer.wrap(q.line());
                        while (b.hasRemaining()) at += c.write(b, at);
                    }
                    return at;
                });
            } catch (IOException e) {
                rollback(batch, e);
                throw new AuditException("cannot write the audit log '" + name + "' (" + file + "): " + e, e);
            }
            Pending last = batch.getLast();
            written = new Mark(last.seq(), last.hash(), pos);
        } finally {
            write.unlock();
        }
    }

    /**
     * Makes everything written so far durable with one fsync, unless another caller's fsync already covered
     * {@code p}. A failed fsync leaves the log refusing everything: after a failed fsync the kernel may have dropped
     * the dirty pages, so what is on disk is unknown (the lesson of PostgreSQL's "fsyncgate"), and the server must be
     * restarted once the disk is fixed; opening the log again finds its real end.
     */
    private void syncTo(Pending p) throws AuditException {
        sync.lock();
        try {
            if (durable.seq() >= p.seq()) {
                if (!stillThere(p)) throw lost(p);
                return;
            }
            if (broken != null) throw new AuditException(broken);
            Mark target = written;
            try {
                channels.uninterruptibly(false, c -> {
                    c.force(false);
                    return 0L;
                });
            } catch (IOException e) {
                broken = "the audit log '" + name + "' (" + file + ") could not be fsynced (" + e + "); its state on disk is"
                        + " unknown, so it takes no more records until the server is restarted on a working disk";
                throw new AuditException(broken, e);
            }
            durable = target;
        } finally {
            sync.unlock();
        }
        // the signed head is the flusher's job (a signature is a quarter of a millisecond the caller need not wait for)
        wake.run();
        if (!stillThere(p)) throw lost(p);
    }

    private synchronized boolean stillThere(Pending p) { return p.epoch() == epoch; }

    private AuditException lost(Pending p) {
        return new AuditException("audit record " + p.seq() + " of '" + name + "' was lost: an earlier write to " + file + " failed");
    }

    /**
     * After a failed write (caller holds {@code write}): back to the last written state, which a failed write never
     * passed, so the file is cut to it; records queued after it are lost to their callers.
     */
    private void rollback(List<Pending> batch, IOException cause) {
        Mark back = written;
        int dropped;
        synchronized (this) {
            dropped = batch.size() + pending.size();
            pending.clear();
            epoch++;
            lastSeq = back.seq();
            lastHash = back.hash();
        }
        try {
            space.cutBackTo(back.size());
        } catch (IOException e) {
            broken = "the audit log '" + name + "' (" + file + ") is in an unknown state: a write failed (" + cause
                    + ") and it could not be cut back (" + e + "); fix the disk and restart the server";
        }
        LOG.log(System.Logger.Level.ERROR, "audit log '" + name + "': write failed (" + cause + "); " + dropped
                + " record(s) not recorded, the log is back at seq " + back.seq());
    }

    /** The position of the last fsynced record. */
    public Position durablePosition() {
        Mark m = durable;
        return new Position(name, m.seq(), m.hash());
    }

    @Override
    public void close() {
        try {
            flush();
        } catch (AuditException e) {
            LOG.log(System.Logger.Level.ERROR, e.getMessage());
        }
        synchronized (this) {
            closed = true;
        }
        write.lock();
        sync.lock();
        try {
            Mark w = written;
            space.close(broken == null && w.equals(durable) ? w.size() : -1);
        } finally {
            sync.unlock();
            write.unlock();
        }
    }
}
