package dev.berth.engine.audit;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
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

    private final String name;
    private final Path file;
    private final Path headFile;
    private final ServerKey key;
    private volatile FileChannel ch;
    private volatile FileChannel headCh;
    private final Runnable wake;

    // guarded by this
    private long lastSeq;
    private String lastHash;
    private final ArrayDeque<Pending> pending = new ArrayDeque<>();
    private int epoch;
    private boolean closed;

    /** A point in the file: the last record written up to it, and the length. */
    private record Mark(long seq, String hash, long size) {}

    // guarded by write (written is also read, without it, by syncers)
    private final ReentrantLock write = new ReentrantLock();
    private volatile Mark written;
    // guarded by sync (durable is also read under write, to roll back to it); lock order: write, then sync
    private final ReentrantLock sync = new ReentrantLock();
    private volatile Mark durable;
    private volatile String broken; // non-null: the file is in an unknown state; refuse everything
    // preallocation (version 2 logs): the file's length, zero-filled past written.size(); extended under alloc
    private boolean preallocate;
    private final ReentrantLock alloc = new ReentrantLock();
    private volatile long allocated;
    // guarded by head: the mark the head file was last written for (it lags durable by up to one flusher pass)
    private final ReentrantLock head = new ReentrantLock();
    private Mark headMark;

    private AuditLog(String name, Path file, Path headFile, ServerKey key, FileChannel ch, FileChannel headCh, Runnable wake) {
        this.name = name;
        this.file = file;
        this.headFile = headFile;
        this.key = key;
        this.ch = ch;
        this.headCh = headCh;
        this.wake = wake;
    }

    /**
     * Opens (or creates) the log {@code name} at {@code file}. An interrupted last line (a crash mid-write) is cut off
     * and recorded as a {@code tail_recovered} record naming its length and digest, so nothing vanishes silently.
     *
     * @param wake called when a {@link Durability#QUEUED} record waits for the flusher
     */
    public static AuditLog open(String name, Path file, ServerKey key, Runnable wake) throws AuditException {
        Path headFile = headOf(file);
        FileChannel ch = null;
        FileChannel headCh = null;
        try {
            Files.createDirectories(file.getParent());
            ch = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.READ, StandardOpenOption.WRITE);
            headCh = FileChannel.open(headFile, StandardOpenOption.CREATE, StandardOpenOption.READ, StandardOpenOption.WRITE);
            AuditLog log = new AuditLog(name, file, headFile, key, ch, headCh, wake);
            byte[] dropped = log.recover();
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
            closeQuietly(ch);
            closeQuietly(headCh);
            throw new AuditException("cannot open the audit log '" + name + "' at " + file + ": " + e, e);
        } catch (AuditException e) {
            closeQuietly(ch);
            closeQuietly(headCh);
            throw e;
        }
    }

    static Path headOf(Path file) {
        String n = file.getFileName().toString();
        return file.resolveSibling((n.endsWith(".log") ? n.substring(0, n.length() - 4) : n) + ".head");
    }

    /** Reads the header and the last complete record; returns the bytes of an interrupted tail it cut off, or null. */
    private byte[] recover() throws IOException, AuditException {
        long size = ch.size();
        if (size == 0) {
            Map<String, Object> h = new LinkedHashMap<>();
            h.put("format", FORMAT);
            h.put("version", VERSION);
            h.put("log", name);
            h.put("created", Instant.now().toString());
            h.put("key_id", key.keyId());
            byte[] header = Canonical.encode(h);
            ByteBuffer b = ByteBuffer.allocate(header.length + 1).put(header).put((byte) '\n').flip();
            while (b.hasRemaining()) ch.write(b, ch.size());
            preallocate = true;
            allocated = header.length + 1L;
            extendTo(ch, allocated + PREALLOC_CHUNK); // zero-filled and fsynced with the header, before any record
            ch.force(true);
            setTail(0, Canonical.sha256(header), header.length + 1L);
            return null;
        }
        byte[] first = readAt(0, (int) Math.min(size, 4096));
        int nl = indexOf(first, (byte) '\n', 0);
        if (nl < 0) throw new AuditException("the audit log " + file + " has no complete header line; it is not a Berth audit log or was cut short");
        byte[] header = java.util.Arrays.copyOf(first, nl);
        Map<String, Object> h = checkHeader(header, file);
        preallocate = ((Number) h.get("version")).intValue() >= PREALLOC_VERSION;
        allocated = size;
        if (preallocate) size = contentEnd(size);
        // the last complete line and anything after it
        int window = (int) Math.min(size, 2L * MAX_RECORD + 2);
        long start = size - window;
        byte[] tail = readAt(start, window);
        if (preallocate) {
            // a power loss can leave zeroed holes in writes that were never fsynced: the records from the first
            // line with a NUL byte on are such a torn tail (fsynced records never contain one)
            int nul = indexOf(tail, (byte) 0, 0);
            if (nul >= 0) tail = java.util.Arrays.copyOf(tail, nul);
        }
        int end = lastIndexOf(tail, (byte) '\n', tail.length - 1);   // end of the last complete line
        byte[] dropped = null;
        long goodSize = start + end + 1;
        if (goodSize < size) dropped = readAt(goodSize, (int) Math.min(size - goodSize, 16L * MAX_RECORD));
        if (start + end == nl) {            // only the header is complete
            setTail(0, Canonical.sha256(header), goodSize);
        } else {
            int lineStart = lastIndexOf(tail, (byte) '\n', end - 1) + 1;
            if (lineStart == 0 && start > 0) throw new AuditException("the last record of " + file + " is longer than " + MAX_RECORD + " bytes");
            Map<String, Object> last;
            try {
                last = Canonical.decodeObject(java.util.Arrays.copyOfRange(tail, lineStart, end));
            } catch (IllegalArgumentException e) {
                throw new AuditException("the last record of " + file + " is unreadable (" + e.getMessage()
                        + "); `berth audit verify` says where the log breaks");
            }
            if (!(last.get("seq") instanceof Number n) || !(last.get("hash") instanceof String hh)) {
                throw new AuditException("the last record of " + file + " has no seq/hash; `berth audit verify` says where the log breaks");
            }
            setTail(n.longValue(), hh, goodSize);
        }
        if (dropped != null) {
            ch.truncate(goodSize);
            allocated = goodSize;
        }
        if (preallocate && allocated - goodSize < PREALLOC_CHUNK / 2) extendTo(ch, allocated + PREALLOC_CHUNK);
        if (dropped != null || allocated > size) ch.force(true);
        return dropped;
    }

    /** Length of the file without its zero-filled tail. */
    private long contentEnd(long size) throws IOException {
        long pos = size;
        while (pos > 0) {
            int n = (int) Math.min(pos, 1 << 16);
            byte[] b = readAt(pos - n, n);
            for (int i = b.length - 1; i >= 0; i--) if (b[i] != 0) return pos - n + i + 1;
            pos -= n;
        }
        return 0;
    }

    /**
     * Makes the file at least {@code length} bytes long with zeros written (not merely allocated: an unwritten
     * extent would turn an overwrite into a metadata change again). Callers hold {@code alloc} or own the log alone.
     */
    private void extendTo(FileChannel c, long length) throws IOException {
        long from = allocated;
        if (length <= from) return;
        ByteBuffer zeros = ByteBuffer.allocate((int) Math.min(length - from, PREALLOC_CHUNK));
        for (long at = from; at < length; ) {
            zeros.clear().limit((int) Math.min(zeros.capacity(), length - at));
            while (zeros.hasRemaining()) at += c.write(zeros, at);
        }
        allocated = length;
    }

    /**
     * Keeps the preallocated stretch ahead of the records (the flusher's job, after its fsyncs): when less than half a
     * chunk is left, adds a chunk of zeros and fsyncs it, so the callers' own fsyncs overwrite known blocks.
     */
    public void extendAhead() {
        if (!preallocate || broken != null || allocated - written.size() >= PREALLOC_CHUNK / 2) return;
        alloc.lock();
        try {
            if (closedNow() || allocated - written.size() >= PREALLOC_CHUNK / 2) return;
            long target = allocated + PREALLOC_CHUNK;
            uninterruptibly(false, c -> {
                extendTo(c, target);
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

    private synchronized boolean closedNow() { return closed; }

    /** Refuses a header that is not ours or is from a newer format. Shared with the verifier. */
    static Map<String, Object> checkHeader(byte[] header, Path file) throws AuditException {
        Map<String, Object> h;
        try {
            h = Canonical.decodeObject(header);
        } catch (IllegalArgumentException e) {
            throw new AuditException(file + " does not start with a Berth audit header: " + e.getMessage());
        }
        if (!FORMAT.equals(h.get("format"))) throw new AuditException(file + " is not a Berth audit log (format " + h.get("format") + ")");
        if (!(h.get("version") instanceof Number v)) throw new AuditException(file + " has no format version in its header");
        if (v.intValue() > VERSION) {
            throw new AuditException(file + " was written by a newer Berth (audit format version " + v + "; this one reads up to "
                    + VERSION + "); use that version, and do not append to it with this one");
        }
        if (v.intValue() < 1) throw new AuditException(file + " has audit format version " + v + ", which never existed");
        return h;
    }

    private void setTail(long seq, String hash, long size) {
        lastSeq = seq;
        lastHash = hash;
        written = durable = new Mark(seq, hash, size);
    }

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
            Map<String, Object> rec = new TreeMap<>(fields);
            for (String k : List.of("seq", "time", "type", "prev", "hash")) {
                if (rec.containsKey(k)) throw new IllegalArgumentException("audit field '" + k + "' is reserved");
            }
            long seq = lastSeq + 1;
            rec.put("seq", seq);
            rec.put("time", Instant.now().toString());
            rec.put("type", type);
            rec.put("prev", lastHash);
            String hash = Canonical.sha256(Canonical.encode(rec));
            rec.put("hash", hash);
            byte[] body = Canonical.encode(rec);
            if (body.length > MAX_RECORD) throw new IllegalArgumentException("audit record of " + body.length + " bytes exceeds " + MAX_RECORD);
            byte[] line = java.util.Arrays.copyOf(body, body.length + 1);
            line[body.length] = '\n';
            p = new Pending(seq, hash, line, epoch);
            pending.add(p);
            lastSeq = seq;
            lastHash = hash;
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
        if (broken == null) updateHead();
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
                if (preallocate) {
                    long need = start;
                    for (Pending q : batch) need += q.line().length;
                    if (need > allocated) growTo(need);
                }
                pos = uninterruptibly(false, c -> {
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
                uninterruptibly(false, c -> {
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

    /**
     * Brings the signed head up to the last fsync, if it lags. Called by the flusher after fsyncs it did or saw, and on
     * close; never by a caller waiting for its record. The head is read after {@code durable}, which only moves after
     * an fsync, so it cannot lead the log.
     */
    private void updateHead() {
        head.lock();
        try {
            Mark d = durable;
            if (d.equals(headMark)) return;
            try {
                writeHead(d);
                headMark = d;
            } catch (IOException e) {
                LOG.log(System.Logger.Level.WARNING, "audit log '" + name + "': head not updated (" + e + "); verify can then"
                        + " not tell a truncation past record " + d.seq() + " from a crash");
            }
        } finally {
            head.unlock();
        }
    }

    /**
     * A batch would go past the preallocated stretch (a burst faster than the flusher, or the first records after an
     * open): zeros are written up to it first, without an fsync (the caller's own fsync then pays the metadata once),
     * so records are only ever written below {@code allocated} and the flusher's zeros never land on one.
     */
    private void growTo(long need) throws IOException {
        alloc.lock();
        try {
            long target = (need + 0xFFFF) & ~0xFFFFL;
            uninterruptibly(false, c -> {
                extendTo(c, target);
                return 0L;
            });
        } finally {
            alloc.unlock();
        }
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
            alloc.lock();
            try {
                uninterruptibly(false, c -> c.size() > back.size() ? c.truncate(back.size()).size() : 0L);
                allocated = Math.min(allocated, back.size());
            } finally {
                alloc.unlock();
            }
        } catch (IOException e) {
            broken = "the audit log '" + name + "' (" + file + ") is in an unknown state: a write failed (" + cause
                    + ") and it could not be cut back (" + e + "); fix the disk and restart the server";
        }
        LOG.log(System.Logger.Level.ERROR, "audit log '" + name + "': write failed (" + cause + "); " + dropped
                + " record(s) not recorded, the log is back at seq " + back.seq());
    }

    private void writeHead(Mark m) throws IOException {
        Map<String, Object> h = new LinkedHashMap<>();
        h.put("log", name);
        h.put("seq", m.seq());
        h.put("hash", m.hash());
        h.put("key_id", key.keyId());
        byte[] signed = Canonical.encode(h);
        h.put("sig", Base64.getEncoder().encodeToString(key.sign(signed)));
        byte[] body = Canonical.encode(h);
        ByteBuffer b = ByteBuffer.allocate(HEAD_SIZE);
        b.put(body);
        while (b.position() < HEAD_SIZE - 1) b.put((byte) ' ');
        b.put((byte) '\n').flip();
        uninterruptibly(true, c -> {
            b.rewind();
            while (b.hasRemaining()) c.write(b, b.position());
            return 0L;
        });
    }

    private interface ChannelOp {
        long apply(FileChannel c) throws IOException;
    }

    /**
     * Runs a file operation so that an interrupt of the calling thread cannot break the log. A {@link FileChannel} is
     * closed when a thread blocked in it is interrupted, and MCP cancellation interrupts the handler's thread: the
     * interrupt status is set aside during the operation (and restored after), and a channel closed by an interrupt
     * that came anyway (or by another thread's interrupt) is reopened and the operation, positional and idempotent,
     * done again.
     */
    private long uninterruptibly(boolean head, ChannelOp op) throws IOException {
        boolean interrupted = Thread.interrupted();
        try {
            for (int attempt = 0; ; attempt++) {
                FileChannel c = head ? headCh : ch;
                try {
                    return op.apply(c);
                } catch (java.nio.channels.ClosedChannelException e) {
                    interrupted |= Thread.interrupted();
                    synchronized (this) {
                        if (closed || attempt >= 3) throw e;
                    }
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
        alloc.lock();
        try {
            Mark w = written;
            if (preallocate && broken == null && w.equals(durable)) {
                try {
                    ch.truncate(w.size()); // a clean close leaves no zero tail; the next open preallocates again
                } catch (IOException e) {
                    LOG.log(System.Logger.Level.WARNING, "audit log '" + name + "': zero tail not cut at close (" + e + ")");
                }
            }
            closeQuietly(ch);
            closeQuietly(headCh);
        } finally {
            alloc.unlock();
            sync.unlock();
            write.unlock();
        }
    }

    private byte[] readAt(long pos, int len) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(len);
        while (b.hasRemaining()) {
            int n = ch.read(b, pos + b.position());
            if (n < 0) break;
        }
        return java.util.Arrays.copyOf(b.array(), b.position());
    }

    static int indexOf(byte[] a, byte v, int from) {
        for (int i = from; i < a.length; i++) if (a[i] == v) return i;
        return -1;
    }

    static int lastIndexOf(byte[] a, byte v, int from) {
        for (int i = from; i >= 0; i--) if (a[i] == v) return i;
        return -1;
    }

    private static void closeQuietly(FileChannel c) {
        if (c == null) return;
        try {
            c.close();
        } catch (IOException ignored) {
            // closing after a failure: the first error has been reported
        }
    }

    static String utf8(byte[] b) { return new String(b, StandardCharsets.UTF_8); }
}
