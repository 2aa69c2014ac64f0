package dev.berth.engine.audit;

import dev.berth.proxy.audit.AuditRecord;
import dev.berth.proxy.audit.AuditSink;
import java.io.IOException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;

/**
 * Every audit log of one Berth home, and the one way records get into them: one log per tenant
 * ({@code home/audit/tenant.<id>.log}) and one for the server's own events ({@code home/audit/server.log}), all signed
 * with the home's {@link ServerKey}. The engine records runs, lifecycle events, credentials and files; the MCP layer
 * records tool calls; the egress proxy's decisions arrive through {@link #egressSink()} and go to the log of the
 * tenant that owns the workspace. A tenant's records are only ever in its own file, so no tool can show one tenant
 * another's. Records never carry secret values: callers pass names, hosts, sizes and digests.
 *
 * <p>Thread-safe. Owns the logs and one daemon thread, {@code berth-audit-flusher}, which writes and fsyncs queued
 * records (the egress proxy's, which arrive on event loops that must not wait for the disk).
 *
 * <p>When a record cannot be written, {@link OnFailure} decides: {@code REFUSE} (default) fails the call that needed
 * it, so nothing runs unrecorded; {@code CONTINUE} logs the error and lets the call proceed unrecorded.
 */
public final class AuditTrail implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger("berth.audit");
    public static final String SERVER_LOG = "server";
    /** How long the flusher lets records gather before it writes and fsyncs them. */
    static final long COALESCE_MS = 25;

    /** What a failed audit write does to the call that needed it (operator config {@code audit.on_failure}). */
    public enum OnFailure { REFUSE, CONTINUE }

    private final Path dir;
    private final ServerKey key;
    private final OnFailure onFailure;
    private final boolean enabled;
    private final Map<String, AuditLog> logs = new ConcurrentHashMap<>();
    private final Map<String, String> tenantOfWorkspace = new ConcurrentHashMap<>();
    private final Set<AuditLog> dirty = new LinkedHashSet<>();
    private final Thread flusher;
    private final java.util.concurrent.ConcurrentLinkedQueue<Egress> egress = new java.util.concurrent.ConcurrentLinkedQueue<>();
    private final java.util.concurrent.atomic.AtomicBoolean egressWaiting = new java.util.concurrent.atomic.AtomicBoolean();
    private final java.util.concurrent.locks.ReentrantLock egressDrain = new java.util.concurrent.locks.ReentrantLock();
    private volatile Consumer<AuditRecord> egressObserver = r -> { };
    private volatile boolean closed;

    private AuditTrail(Path dir, ServerKey key, OnFailure onFailure, boolean enabled) {
        this.dir = dir;
        this.key = key;
        this.onFailure = onFailure;
        this.enabled = enabled;
        this.flusher = enabled ? Thread.ofPlatform().daemon().name("berth-audit-flusher").start(this::flushLoop) : null;
    }

    /** The trail of {@code home}: logs in {@code home/audit}, the signing key in {@code home/keys} (created on first use). */
    public static AuditTrail open(Path home, OnFailure onFailure) throws IOException {
        return new AuditTrail(home.resolve("audit"), ServerKey.loadOrCreate(home.resolve("keys")), onFailure, true);
    }

    /**
     * A trail that records nothing (receipts are still signed, without a chain position). Only for measuring what
     * logging costs; no operator setting turns auditing off.
     */
    public static AuditTrail disabledForBenchmark(Path home) throws IOException {
        return new AuditTrail(home.resolve("audit"), ServerKey.loadOrCreate(home.resolve("keys")), OnFailure.CONTINUE, false);
    }

    public ServerKey key() { return key; }

    public OnFailure onFailure() { return onFailure; }

    public boolean enabled() { return enabled; }

    /** The log file of a tenant in the audit folder {@code auditDir}. */
    public static Path tenantLog(Path auditDir, String tenant) {
        return auditDir.resolve("tenant." + tenant + ".log");
    }

    public static Path serverLog(Path auditDir) {
        return auditDir.resolve("server.log");
    }

    public Path dir() { return dir; }

    /** Egress records of this workspace go to this tenant's log from now on. */
    public void bindWorkspace(String workspaceId, String tenant) {
        tenantOfWorkspace.put(workspaceId, tenant);
    }

    /**
     * Appends a record to {@code tenant}'s log (null: the server log) with the given durability.
     *
     * @return where it went; null when auditing is off, or the write failed and the policy is {@code CONTINUE}
     * @throws AuditException the write failed and the policy is {@code REFUSE}
     */
    public AuditLog.Position record(String tenant, String type, Map<String, Object> fields, Durability durability) throws AuditException {
        if (!enabled) return null;
        if (durability != Durability.QUEUED) drainEgress();
        try {
            return log(tenant).append(type, fields, durability);
        } catch (AuditException e) {
            if (onFailure == OnFailure.REFUSE) throw e;
            LOG.log(System.Logger.Level.ERROR, "unrecorded " + type + " (audit.on_failure is continue): " + e.getMessage());
            return null;
        }
    }

    /** Durable append: returns once the record (and all before it) is fsynced. */
    public AuditLog.Position record(String tenant, String type, Map<String, Object> fields) throws AuditException {
        return record(tenant, type, fields, Durability.DURABLE);
    }

    /**
     * Starts the fsync that makes the record at {@code pos} durable on another thread and returns at once, so the
     * caller can do its remaining work (signing a receipt) while the disk works; {@link #awaitDurable} then waits
     * for that fsync (or does it, if it has not begun). Failures surface there, not here.
     */
    public void syncAhead(String tenant, AuditLog.Position pos) {
        if (pos == null || !enabled) return;
        AuditLog l = logs.get(tenant == null ? SERVER_LOG : "tenant:" + tenant);
        if (l == null) return;
        Thread.ofVirtual().name("berth-audit-sync").start(() -> {
            try {
                l.awaitDurable(pos);
            } catch (AuditException e) {
                // reported to the caller by its own awaitDurable
            }
        });
    }

    /** Waits until a record appended with {@link Durability#WRITTEN} is fsynced (null: nothing to wait for). */
    public void awaitDurable(String tenant, AuditLog.Position pos) throws AuditException {
        if (pos == null || !enabled) return;
        try {
            log(tenant).awaitDurable(pos);
        } catch (AuditException e) {
            if (onFailure == OnFailure.REFUSE) throw e;
            LOG.log(System.Logger.Level.ERROR, "record " + pos.seq() + " may not be durable (audit.on_failure is continue): " + e.getMessage());
        }
    }

    /** Queued append that never throws or blocks on the disk (a failure is logged: nothing waits for the answer). */
    public void recordLater(String tenant, String type, Map<String, Object> fields) {
        if (!enabled || closed) return;
        appendQueued(tenant, type, fields);
    }

    private void appendQueued(String tenant, String type, Map<String, Object> fields) {
        try {
            log(tenant).append(type, fields, Durability.QUEUED);
        } catch (AuditException e) {
            LOG.log(System.Logger.Level.ERROR, "unrecorded " + type + ": " + e.getMessage());
        }
    }

    private AuditLog log(String tenant) throws AuditException {
        String name = tenant == null ? SERVER_LOG : "tenant:" + tenant;
        AuditLog l = logs.get(name);
        if (l != null) return l;
        synchronized (logs) {
            l = logs.get(name);
            if (l == null) {
                Path file = tenant == null ? serverLog(dir) : tenantLog(dir, tenant);
                AuditLog[] self = new AuditLog[1];
                l = AuditLog.open(name, file, key, () -> wake(self[0]));
                self[0] = l;
                logs.put(name, l);
            }
            return l;
        }
    }

    private void wake(AuditLog log) {
        synchronized (dirty) {
            // only the first dirty log wakes the flusher: a notify during its coalescing wait would cut the wait short,
            // and its fsync would then race the caller's own
            if (dirty.add(log) && dirty.size() == 1) dirty.notifyAll();
        }
    }

    private void flushLoop() {
        while (true) {
            java.util.List<AuditLog> todo;
            synchronized (dirty) {
                while (dirty.isEmpty() && !egressWaiting.get() && !closed) {
                    try {
                        dirty.wait();
                    } catch (InterruptedException e) {
                        return;
                    }
                }
                if (dirty.isEmpty() && egress.isEmpty()) {
                    if (closed) return; // nothing left
                    egressWaiting.set(false); // a caller that needed durability drained the egress records first
                    continue;
                }
                // coalesce: a short call makes its own records durable at its end (one fsync for all of them);
                // the flusher is for records nobody waits for, for calls that last longer than this, and for heads
                long deadline = System.nanoTime() + COALESCE_MS * 1_000_000;
                for (long left; !closed && (left = deadline - System.nanoTime()) > 0; ) {
                    try {
                        dirty.wait(Math.max(1, left / 1_000_000));
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            }
            egressWaiting.set(false);
            drainEgress(); // outside the monitor: appending marks logs dirty
            synchronized (dirty) {
                todo = java.util.List.copyOf(dirty);
                dirty.clear();
            }
            for (AuditLog l : todo) {
                try {
                    l.flush();
                } catch (AuditException e) {
                    LOG.log(System.Logger.Level.ERROR, e.getMessage());
                }
                l.extendAhead(); // keep the zero-filled stretch ahead, so callers' fsyncs stay overwrites
            }
        }
    }

    /**
     * The egress proxy's audit sink: each decision goes, queued, to the log of the tenant that owns the workspace
     * (the server log for proxy notes and unknown workspaces), and past {@code observer} (metrics).
     */
    public AuditSink egressSink() {
        return new AuditSink() {
            @Override
            public void record(AuditRecord r) {
                egressObserver.accept(r);
                if (!enabled || closed) return;
                // encoding, hashing and chaining happen on the flusher (or on the next caller that needs durability),
                // not on the proxy's event loop, where they would delay the next connection's setup
                egress.add(new Egress(r.workspace() == null ? null : tenantOfWorkspace.get(r.workspace()), r));
                if (egressWaiting.compareAndSet(false, true)) {
                    synchronized (dirty) {
                        dirty.notifyAll();
                    }
                }
            }
        };
    }

    private record Egress(String tenant, AuditRecord record) {}

    /**
     * Appends the egress records the proxy has handed over so far, in the order it handed them over. Called by the
     * flusher, before every append that a caller waits for (so a run's durable record follows the egress records of
     * connections that closed before it), and on close.
     */
    private void drainEgress() {
        if (egress.isEmpty()) return;
        egressDrain.lock();
        try {
            for (Egress e; (e = egress.poll()) != null; ) {
                AuditRecord r = e.record();
                appendQueued(e.tenant(), r.event().equals("decision") ? "egress" : "egress_" + r.event().replace('-', '_'), egressFields(r));
            }
        } finally {
            egressDrain.unlock();
        }
    }

    /** Sees every egress record on its way to the chain (on proxy threads: must not block). */
    public void observeEgress(Consumer<AuditRecord> observer) {
        this.egressObserver = observer;
    }

    static Map<String, Object> egressFields(AuditRecord r) {
        Map<String, Object> m = new LinkedHashMap<>();
        put(m, "workspace", r.workspace());
        put(m, "run", r.run());
        put(m, "connection", r.connection());
        put(m, "kind", r.kind());
        put(m, "method", r.method());
        put(m, "host", r.host());
        if (r.port() != 0) m.put("port", r.port());
        put(m, "resolved_address", r.resolvedAddress());
        put(m, "decision", r.decision());
        put(m, "reason", r.reason());
        if (r.event().equals("decision")) {
            m.put("bytes_up", r.bytesUp());
            m.put("bytes_down", r.bytesDown());
            m.put("duration_ms", r.durationMs());
        }
        put(m, "close_reason", r.closeReason());
        m.put("at", r.time().toString());
        return m;
    }

    private static void put(Map<String, Object> m, String k, Object v) {
        if (v != null) m.put(k, v);
    }

    /** Flushes and closes every log. Call after the egress proxy has closed, so its last records are in. */
    @Override
    public void close() {
        if (closed) return;
        synchronized (dirty) {
            closed = true;
            dirty.notifyAll();
        }
        if (flusher != null) {
            try {
                flusher.join(10_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        drainEgress(); // whatever arrived after the flusher's last pass (closed stops new ones)
        for (AuditLog l : logs.values()) l.close();
    }
}
