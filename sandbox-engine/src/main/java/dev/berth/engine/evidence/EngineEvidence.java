package dev.berth.engine.evidence;

import dev.berth.engine.api.AgentConfigChange;
import dev.berth.engine.api.EgressDenial;
import dev.berth.engine.api.EngineConfig;
import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.EngineException.Kind;
import dev.berth.engine.api.ImageRef;
import dev.berth.engine.api.RunRequest;
import dev.berth.engine.api.RunResult;
import dev.berth.engine.api.SecretUse;
import dev.berth.engine.api.SnapshotInfo;
import dev.berth.engine.api.Tenant;
import dev.berth.engine.audit.AuditException;
import dev.berth.engine.audit.AuditLog;
import dev.berth.engine.audit.AuditTrail;
import dev.berth.engine.audit.Canonical;
import dev.berth.engine.audit.Durability;
import dev.berth.engine.audit.Receipts;
import dev.berth.engine.egress.WorkspaceEgress;
import dev.berth.engine.metrics.EngineMetrics;
import dev.berth.engine.workspace.Workspace;
import dev.berth.proxy.policy.Policy;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

/**
 * What the engine records and measures: the audit records of runs, credentials, files and lifecycle events (each in
 * its tenant's chain), the signed receipt of every foreground run, and the engine's meters. The one place that knows
 * the record shapes, so the lifecycle and run code call one method per event.
 *
 * <p>Records carry names, sizes and digests, never secret values: env values, stdin and file contents are reduced to
 * their SHA-256; long commands are cut (with the digest of the whole); credentials appear as binding names and hosts.
 * A record that cannot be written fails the engine call with {@code UNAVAILABLE} when the trail refuses on failure,
 * before the action for records made before it and instead of the result for records made after it.
 *
 * <p>Thread-safe. Owns the audit trail (closed by {@link #close}).
 */
public final class EngineEvidence implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger("berth.audit");
    /** Commands longer than this are recorded cut, with the length and digest of the whole. */
    static final int COMMAND_KEPT = 4096;

    private final AuditTrail trail;
    private final EngineMetrics metrics;
    private final Map<String, String> imageIds = new ConcurrentHashMap<>();
    /** Writes a foreground run's records off its thread while that thread waits on the guest agent anyway. */
    private final java.util.concurrent.ExecutorService writer = java.util.concurrent.Executors.newVirtualThreadPerTaskExecutor();

    public EngineEvidence(EngineConfig config) throws EngineException {
        try {
            this.trail = config.audit() != null ? config.audit() : AuditTrail.open(config.home(), AuditTrail.OnFailure.REFUSE);
        } catch (IOException e) {
            throw new EngineException(Kind.UNAVAILABLE, "cannot open the audit trail in " + config.home() + ": " + e.getMessage(), e);
        }
        this.metrics = config.metrics();
        trail.observeEgress(metrics::egress);
    }

    public AuditTrail trail() { return trail; }

    public EngineMetrics metrics() { return metrics; }

    /** Egress records of {@code ws} go to its tenant's log. */
    public void bind(Workspace ws) {
        trail.bindWorkspace(ws.id, ws.tenant);
    }

    /**
     * What the workspace runs on, for the audit log and receipts: {@code NAME@sha256:...} for an image from the store
     * (the digest it was opened with), else the driver's own image id.
     */
    String imageId(Workspace ws) {
        ImageRef image = ws.image();
        if (image != null) return image.name() + "@" + image.digest();
        return imageIds.computeIfAbsent(ws.driver.name(), n -> String.valueOf(ws.driver.imageId()));
    }

    private AuditLog.Position record(String tenant, String type, Map<String, Object> fields, Durability d) throws EngineException {
        try {
            return trail.record(tenant, type, fields, d);
        } catch (AuditException e) {
            throw new EngineException(Kind.UNAVAILABLE, "the audit log cannot be written, so Berth refuses to act unrecorded: "
                    + e.getMessage() + ". Free or fix the disk of the Berth home (or, as the operator, set audit.on_failure to"
                    + " \"continue\")", e);
        }
    }

    private Map<String, Object> base(Workspace ws) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("workspace", ws.id);
        if (ws.name != null) m.put("workspace_name", ws.name);
        m.put("isolation", ws.driver.name());
        return m;
    }

    // ---------------------------------------------------------------- lifecycle

    /**
     * A lifecycle event (open, fork, reopen, resume, park, close, snapshot ...), durable before the call returns.
     *
     * @param t0 {@link System#nanoTime()} when the operation began, for its latency histogram (0: not timed)
     */
    public void lifecycle(Workspace ws, String event, Map<String, Object> extra, long t0) throws EngineException {
        if (t0 != 0) metrics.operation(event, ws.driver.name(), System.nanoTime() - t0, true);
        Map<String, Object> m = base(ws);
        m.put("event", event);
        m.put("lifecycle", ws.lifecycle.wireName());
        m.put("image", imageId(ws));
        m.putAll(extra);
        record(ws.tenant, "workspace", m, Durability.DURABLE);
    }

    /** A lifecycle operation that failed (measured; the error reaches the caller, and the MCP layer records it). */
    public void failed(String op, String isolation, long t0) {
        metrics.operation(op, isolation, System.nanoTime() - t0, false);
    }

    /** The same as {@link #lifecycle} for paths that cannot refuse any more (shutdown, idle reaper): logged if lost. */
    public void lifecycleQuietly(Workspace ws, String event, Map<String, Object> extra, long t0) {
        try {
            lifecycle(ws, event, extra, t0);
        } catch (EngineException e) {
            LOG.log(System.Logger.Level.ERROR, "unrecorded " + event + " of " + ws.id + ": " + e.getMessage());
        }
    }

    /** A content digest of a snapshot's files (path, size and SHA-256 of each, sorted), computed off the caller's path. */
    public void snapshotDigest(Workspace ws, String snapshotId, Path dir) {
        // a platform thread of low priority: hashing reads every byte of the snapshot (a sparse disk image too), and
        // on a virtual thread those reads would hold one of the few carrier threads that every other virtual thread needs
        // (and at nice 19: Java's priorities do nothing on Linux, and at equal priority this hashing took a core from
        // the fork that usually follows a snapshot)
        Thread.ofPlatform().daemon().priority(Thread.MIN_PRIORITY).name("berth-snapshot-digest-" + snapshotId).start(() -> {
            dev.berth.engine.host.BackgroundPriority.lowerCurrentThread();
            Map<String, Object> m = base(ws);
            m.put("snapshot", snapshotId);
            try {
                m.put("digest", "sha256:" + treeDigest(dir));
            } catch (IOException e) {
                m.put("digest_error", e.toString());
            }
            trail.recordLater(ws.tenant, "snapshot_digest", m);
        });
    }

    static String treeDigest(Path dir) throws IOException {
        List<Path> files;
        try (var s = Files.walk(dir)) {
            files = s.filter(Files::isRegularFile).sorted().toList();
        }
        var outer = Canonical.newSha256();
        for (Path f : files) {
            var inner = Canonical.newSha256();
            try (InputStream in = Files.newInputStream(f)) {
                byte[] buf = new byte[1 << 16];
                for (int n; (n = in.read(buf)) > 0; ) inner.update(buf, 0, n);
            }
            outer.update((dir.relativize(f) + "\0" + Files.size(f) + "\0"
                    + java.util.HexFormat.of().formatHex(inner.digest()) + "\n").getBytes(StandardCharsets.UTF_8));
        }
        return java.util.HexFormat.of().formatHex(outer.digest());
    }

    /** A snapshot deleted by its tenant. */
    public void snapshotDeleted(Tenant tenant, SnapshotInfo snap) throws EngineException {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("event", "snapshot_delete");
        m.put("snapshot", snap.id());
        m.put("snapshot_name", snap.name());
        record(tenant.id(), "snapshot", m, Durability.DURABLE);
    }

    // ---------------------------------------------------------------- runs

    /** A record written on another thread: {@link #join} gives its position, or the error that refused it. */
    public static final class Written {
        private final java.util.concurrent.CompletableFuture<AuditLog.Position> pos;

        private Written(java.util.concurrent.CompletableFuture<AuditLog.Position> pos) { this.pos = pos; }

        public AuditLog.Position join() throws EngineException {
            try {
                return pos.join();
            } catch (java.util.concurrent.CompletionException e) {
                if (e.getCause() instanceof EngineException ee) throw ee;
                throw new EngineException(Kind.INTERNAL, "writing an audit record failed: " + e.getCause(), e.getCause());
            }
        }
    }

    private interface RecordWrite { AuditLog.Position write() throws EngineException; }

    private Written inBackground(RecordWrite w) {
        var f = new java.util.concurrent.CompletableFuture<AuditLog.Position>();
        writer.execute(() -> {
            try {
                f.complete(w.write());
            } catch (Throwable t) {
                f.completeExceptionally(t);
            }
        });
        return new Written(f);
    }

    /**
     * Before a foreground run starts: its record is written on another thread while the guard takes its fingerprint
     * of the workspace; the run joins it before the command starts (so a full disk still refuses the run), and its
     * fsync follows, at the latest with the run's end record.
     */
    public Written runStarting(Workspace ws, String runId, RunRequest req) {
        Map<String, Object> m = runStart(ws, runId, req, false);
        return inBackground(() -> record(ws.tenant, "run_start", m, Durability.WRITTEN));
    }

    /** Before a background run starts: durable before the call returns (it returns at once). */
    public void backgroundStarting(Workspace ws, String runId, RunRequest req) throws EngineException {
        record(ws.tenant, "run_start", runStart(ws, runId, req, true), Durability.DURABLE);
    }

    private Map<String, Object> runStart(Workspace ws, String runId, RunRequest req, boolean background) {
        Map<String, Object> m = base(ws);
        m.put("run", runId);
        m.put("background", background);
        String cmd = req.command() == null ? "" : req.command();
        m.put("command", cmd.length() > COMMAND_KEPT ? cmd.substring(0, COMMAND_KEPT) : cmd);
        if (cmd.length() > COMMAND_KEPT) m.put("command_length", cmd.length());
        m.put("command_sha256", Canonical.sha256(cmd.getBytes(StandardCharsets.UTF_8)));
        if (req.cwd() != null) m.put("cwd", req.cwd());
        if (req.env() != null && !req.env().isEmpty()) {
            m.put("env_names", new ArrayList<>(new TreeMap<>(req.env()).keySet())); // names only: values may be secrets
            m.put("env_sha256", Canonical.sha256(Canonical.encode(new TreeMap<>(req.env()))));
        }
        if (req.stdin() != null) {
            byte[] in = req.stdin().getBytes(StandardCharsets.UTF_8);
            m.put("stdin_bytes", in.length);
            m.put("stdin_sha256", Canonical.sha256(in));
        }
        if (req.timeoutSeconds() != null) m.put("timeout_s", req.timeoutSeconds());
        if (req.egress() != null) m.put("egress_narrowing", req.egress());
        if (req.secrets() != null) m.put("secrets_narrowing", req.secrets());
        return m;
    }

    /** Placeholders minted for a run: binding names only (the placeholders themselves are credentials while it runs). */
    public void credentialsMinted(Workspace ws, String runId, List<String> bindings) {
        credentialsMinted(ws, runId, bindings, null);
    }

    /** The same, queued after {@code after} (a foreground run's start record, still being written) in the chain. */
    public void credentialsMinted(Workspace ws, String runId, List<String> bindings, Written after) {
        if (bindings.isEmpty()) return;
        Map<String, Object> m = base(ws);
        m.put("run", runId);
        m.put("event", "minted");
        m.put("bindings", bindings);
        if (after == null) trail.recordLater(ws.tenant, "credential", m);
        else after.pos.whenComplete((p, e) -> trail.recordLater(ws.tenant, "credential", m));
    }

    /** Placeholders revoked when their run (or background process) ended, with what the proxy injected. */
    public void credentialsRevoked(Workspace ws, String runId, List<String> bindings, List<SecretUse> uses) {
        if (bindings.isEmpty()) return;
        Map<String, Object> m = base(ws);
        m.put("run", runId);
        m.put("event", "revoked");
        m.put("bindings", bindings);
        m.put("used", uses.stream().map(EngineEvidence::use).toList());
        trail.recordLater(ws.tenant, "credential", m);
    }

    private static Map<String, Object> use(SecretUse u) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("name", u.secret());
        m.put("host", u.host());
        m.put("count", u.count());
        return m;
    }

    /**
     * Agent-configuration files a run changed (the guard's findings), one record per run, written now and made
     * durable with the run's result ({@link #runEnded} waits for it); null when there is nothing to record.
     */
    public AuditLog.Position guardFindings(Workspace ws, String runId, RunRecord after, List<AgentConfigChange> changes) throws EngineException {
        if (changes.isEmpty()) return null;
        after.pos().join(); // behind the run's end record in the chain
        Map<String, Object> m = base(ws);
        m.put("run", runId);
        m.put("changes", changes.stream().map(c -> {
            Map<String, Object> x = new LinkedHashMap<>();
            x.put("path", c.path());
            x.put("change", c.change());
            x.put("reverted", c.reverted());
            return x;
        }).toList());
        return record(ws.tenant, "guard_finding", m, Durability.WRITTEN);
    }

    /** A background run that could not start (its run_start is already in the chain). */
    public void runFailed(Workspace ws, String runId, long t0, EngineException e) {
        metrics.run(ws.driver.name(), System.nanoTime() - t0, "error");
        Map<String, Object> m = base(ws);
        m.put("run", runId);
        m.put("error", e.getMessage());
        trail.recordLater(ws.tenant, "run_error", m);
    }

    /** A foreground run's end record (its position once written) and its receipt (signed once the record is written). */
    public record RunRecord(Written pos, java.util.concurrent.CompletableFuture<Map<String, Object>> receipt) {}

    /**
     * A foreground command ended: its record is built, encoded, chained and written on another thread, which then
     * starts its fsync (with everything before it, run_start included) and signs the run's receipt naming it, while the
     * engine finishes the run (the agent-config guard's look at the workspace); {@link #runEnded} waits for the
     * receipt and the fsync. The receipt says what the record says; its {@code ended_at} is when the command ended.
     */
    public RunRecord runExited(Workspace ws, String runId, long t0, Instant startedAt, Policy effective, RunResult r,
                               List<SecretUse> used, boolean resumed, WorkspaceEgress.RunEgress egress) {
        metrics.run(ws.driver.name(), System.nanoTime() - t0, r.timedOut() ? "timeout" : r.exitCode() == 0 ? "exit_0" : "exit_nonzero");
        Instant endedAt = Instant.now();
        // what the record needs of the run's egress, copied now: the run is over, its egress record is final
        Map<String, Object> egressSummary = egressSummary(egress);
        List<Map<String, Object>> secrets = used.stream().map(EngineEvidence::use).toList();
        var receipt = new java.util.concurrent.CompletableFuture<Map<String, Object>>();
        Written pos = inBackground(() -> {
            try {
                Map<String, Object> m = base(ws);
                m.put("run", runId);
                m.put("exit_code", r.exitCode());
                if (r.signal() != 0) m.put("signal", r.signal());
                m.put("timed_out", r.timedOut());
                m.put("duration_ms", r.durationMs());
                m.put("stdout", output(r.stdoutBytes(), r.stdoutSha256()));
                m.put("stderr", output(r.stderrBytes(), r.stderrSha256()));
                PolicyDigest last = lastDigest;
                if (last == null || last.policy() != effective) lastDigest = last = new PolicyDigest(effective, policyDigest(effective));
                m.put("egress_policy_digest", last.digest());
                m.put("egress", egressSummary);
                m.put("secrets_used", secrets);
                if (resumed) m.put("resumed", true);
                AuditLog.Position p = record(ws.tenant, "run", m, Durability.WRITTEN);
                trail.syncAhead(ws.tenant, p);
                Map<String, Object> body = new LinkedHashMap<>();
                body.put("run", runId);
                body.put("tenant", ws.tenant);
                body.put("workspace", ws.id);
                body.put("isolation", ws.driver.name());
                body.put("image", imageId(ws));
                body.put("egress_policy_digest", last.digest());
                body.put("secrets_used", secrets);
                body.put("egress", egressSummary);
                body.put("exit_code", r.exitCode());
                body.put("timed_out", r.timedOut());
                body.put("stdout", output(r.stdoutBytes(), r.stdoutSha256()));
                body.put("stderr", output(r.stderrBytes(), r.stderrSha256()));
                body.put("started_at", startedAt.toString());
                body.put("ended_at", endedAt.toString());
                body.put("audit", p == null ? null : p.toJson());
                receipt.complete(Receipts.sign(body, trail.key()));
                return p;
            } catch (Throwable t) {
                receipt.completeExceptionally(t);
                throw t;
            }
        });
        return new RunRecord(pos, receipt);
    }

    /**
     * A foreground run is ready to return: its receipt is attached once its end record and {@code last} (a later
     * record of the run, or null) are durable. A result whose record cannot be made durable is withheld.
     */
    public RunResult runEnded(Workspace ws, String runId, RunRecord rec, AuditLog.Position last, RunResult r)
            throws EngineException {
        AuditLog.Position pos = rec.pos().join();
        dev.berth.engine.metrics.CallPhases.mark("audit.run.write_wait");
        Map<String, Object> receipt = rec.receipt().join();
        dev.berth.engine.metrics.CallPhases.mark("receipt.sign_wait");
        try {
            trail.awaitDurable(ws.tenant, last != null ? last : pos);
            dev.berth.engine.metrics.CallPhases.mark("audit.fsync_wait");
        } catch (AuditException e) {
            throw new EngineException(Kind.UNAVAILABLE, "the run ended, but its audit record could not be made durable: "
                    + e.getMessage() + "; its result is withheld because it would be unrecorded", e);
        }
        return r.withReceipt(runId, receipt);
    }

    private static Map<String, Object> output(long bytes, String sha256) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("bytes", bytes);
        m.put("sha256", sha256);
        return m;
    }

    /** The last policy digested, by identity: a workspace's runs mostly share one policy object (policies are values). */
    private record PolicyDigest(Policy policy, String digest) {}

    private volatile PolicyDigest lastDigest;

    /** SHA-256 of the canonical list of the effective allowlist entries, sorted ("*.github.com:[443]", ...). */
    public static String policyDigest(Policy p) {
        List<String> entries = new ArrayList<>(p.describe());
        entries.sort(null);
        return "sha256:" + Canonical.sha256(Canonical.encode(entries));
    }

    private static Map<String, Object> egressSummary(WorkspaceEgress.RunEgress egress) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("allowed", hostCounts(egress.allowedHosts()));
        Map<String, Long> denied = new TreeMap<>();
        for (EgressDenial d : egress.denials()) denied.merge(d.host() + ":" + d.port(), (long) d.count(), Long::sum);
        m.put("denied", hostCounts(denied));
        return m;
    }

    private static List<Map<String, Object>> hostCounts(Map<String, Long> counts) {
        return new TreeMap<>(counts).entrySet().stream().map(e -> {
            Map<String, Object> x = new LinkedHashMap<>();
            x.put("host", e.getKey());
            x.put("count", e.getValue());
            return x;
        }).toList();
    }

    // ---------------------------------------------------------------- files

    /** A file written through the tools: path, size and digest of what was written (never the content). */
    public void fileWritten(Workspace ws, String path, byte[] data, boolean append, int mode) throws EngineException {
        Map<String, Object> m = base(ws);
        m.put("path", path);
        m.put("bytes", data.length);
        m.put("sha256", Canonical.sha256(data));
        m.put("append", append);
        m.put("mode", Integer.toOctalString(mode));
        record(ws.tenant, "file_written", m, Durability.DURABLE);
    }

    /**
     * A directory imported into a workspace or its changes exported (issue 29): where from or to, size and digest
     * of what crossed (the tar stream, the patch, the bundle), durable before the call returns.
     */
    public void transfer(Workspace ws, String event, Map<String, Object> fields) throws EngineException {
        Map<String, Object> m = base(ws);
        m.put("event", event);
        m.putAll(fields);
        record(ws.tenant, "transfer", m, Durability.DURABLE);
    }

    @Override
    public void close() {
        writer.close(); // waits for records still being written
        trail.close();
    }
}
