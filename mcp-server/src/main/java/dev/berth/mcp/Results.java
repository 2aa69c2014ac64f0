package dev.berth.mcp;

import dev.berth.engine.CloseResult;
import dev.berth.engine.OpenResult;
import dev.berth.engine.ParkResult;
import dev.berth.engine.ProcessStatus;
import dev.berth.engine.RunResult;
import dev.berth.engine.SnapshotInfo;
import dev.berth.engine.WorkspaceInfo;
import dev.berth.engine.spi.DriverCapabilities;
import java.util.LinkedHashMap;
import java.util.Map;

/** Maps engine results to the structured content the tool output schemas (tool-schemas/) describe. */
final class Results {
    private Results() {}

    static Map<String, Object> workspace(WorkspaceInfo w) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("workspace", w.id());
        m.put("name", w.name());
        m.put("lifecycle", w.lifecycle().wireName());
        m.put("isolation", w.isolation());
        m.put("state", w.state().wireName());
        m.put("capabilities", capabilities(w.capabilities()));
        m.put("created_at", w.createdAt().toString());
        m.put("last_used_at", w.lastUsedAt().toString());
        m.put("from_snapshot", w.fromSnapshot());
        m.put("active_runs", w.activeRuns());
        m.put("egress_policy", w.egressPolicy());
        m.put("secrets", w.secrets());
        if (w.recovered() != null) m.put("recovered", w.recovered());
        if (w.idleParkAt() != null) m.put("idle_park_at", w.idleParkAt().toString());
        if (w.expiresAt() != null) m.put("expires_at", w.expiresAt().toString());
        m.put("resources", resources(w.resources()));
        m.put("limits", w.limits().stream().map(Results::limit).toList());
        if (w.image() != null) {
            Map<String, Object> img = new LinkedHashMap<>();
            img.put("name", w.image().name());
            img.put("digest", w.image().digest());
            m.put("image", img);
        }
        return m;
    }

    static Map<String, Object> image(dev.berth.engine.image.ImageInfo i) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("name", i.name());
        m.put("digest", i.digest());
        m.put("bytes", i.bytes());
        m.put("base_disk_bytes", i.baseDiskBytes());
        m.put("drivers", i.drivers());
        m.put("origin", i.origin());
        m.put("imported_at", i.importedAt());
        return m;
    }

    static Map<String, Object> resources(dev.berth.engine.spi.Resources r) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("vcpus", r.vcpus());
        m.put("memory_mib", r.memoryMiB());
        m.put("disk_mib", r.diskMiB());
        m.put("max_pids", r.maxPids());
        for (String n : dev.berth.engine.spi.IoLimits.NAMES) m.put(n, r.io().value(n));
        return m;
    }

    static Map<String, Object> limit(dev.berth.engine.spi.Limit l) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("name", l.name());
        m.put("value", l.value());
        m.put("unit", l.unit());
        m.put("enforced", l.enforced());
        m.put("how", l.how());
        return m;
    }

    static Map<String, Object> capabilities(DriverCapabilities c) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("boundary", c.boundary());
        m.put("own_kernel", c.ownKernel());
        m.put("park_keeps_memory", c.parkKeepsMemory());
        m.put("snapshot_keeps_memory", c.snapshotKeepsMemory());
        m.put("accelerator", c.accelerator());
        return m;
    }

    static Map<String, Object> open(OpenResult r) {
        Map<String, Object> m = workspace(r.workspace());
        m.put("created", r.created());
        m.put("resumed", r.resumed());
        m.put("note", r.note());
        if (r.pool() != null) m.put("pool", r.pool());
        return m;
    }

    /** open_workspace with count: the first workspace as the result, and every one of them under {@code forks}. */
    static Map<String, Object> openMany(java.util.List<OpenResult> all) {
        Map<String, Object> m = open(all.getFirst());
        if (all.size() > 1) {
            m.put("note", "forked " + all.size() + " workspaces from snapshot '" + all.getFirst().workspace().fromSnapshot()
                    + "' (this one and " + (all.size() - 1) + " more, all listed in forks)");
        }
        m.put("forks", all.stream().map(Results::open).toList());
        return m;
    }

    static Map<String, Object> run(RunResult r) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("workspace", r.workspace());
        m.put("exit_code", r.exitCode());
        m.put("signal", r.signal());
        m.put("stdout", r.stdout());
        m.put("stderr", r.stderr());
        m.put("stdout_bytes", r.stdoutBytes());
        m.put("stderr_bytes", r.stderrBytes());
        m.put("stdout_truncated", r.stdoutTruncated());
        m.put("stderr_truncated", r.stderrTruncated());
        m.put("duration_ms", r.durationMs());
        m.put("timed_out", r.timedOut());
        m.put("resumed", r.resumed());
        m.put("note", r.note());
        m.put("agent_config_changes", r.agentConfigChanges().stream().map(c -> {
            Map<String, Object> x = new LinkedHashMap<>();
            x.put("path", c.path());
            x.put("change", c.change());
            x.put("reverted", c.reverted());
            return x;
        }).toList());
        m.put("egress_denied", r.egressDenied().stream().map(d -> {
            Map<String, Object> x = new LinkedHashMap<>();
            x.put("host", d.host());
            x.put("port", d.port());
            x.put("reason", d.reason());
            x.put("count", d.count());
            return x;
        }).toList());
        if (!r.egressFiltered().isEmpty()) m.put("egress_filtered", r.egressFiltered());
        if (r.recovered() != null) m.put("recovered", r.recovered());
        if (r.idleParkAt() != null) m.put("idle_park_at", r.idleParkAt().toString());
        if (r.expiresAt() != null) m.put("expires_at", r.expiresAt().toString());
        if (!r.secretsUsed().isEmpty()) {
            m.put("secrets_used", r.secretsUsed().stream().map(u -> {
                Map<String, Object> x = new LinkedHashMap<>();
                x.put("secret", u.secret());
                x.put("host", u.host());
                x.put("count", u.count());
                return x;
            }).toList());
        }
        if (r.runId() != null) m.put("run_id", r.runId());
        if (r.receipt() != null) m.put("receipt", r.receipt());
        return m;
    }

    /** A background process, in the run result's shape (exit_code null while it runs). */
    static Map<String, Object> process(ProcessStatus p) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("workspace", p.workspace());
        m.put("exit_code", p.exitCode());
        m.put("signal", p.signal());
        m.put("stdout", p.stdout());
        m.put("stderr", p.stderr());
        m.put("stdout_bytes", p.stdoutNext());
        m.put("stderr_bytes", p.stderrNext());
        m.put("stdout_truncated", p.stdoutDropped() > 0);
        m.put("stderr_truncated", p.stderrDropped() > 0);
        m.put("duration_ms", p.durationMs());
        m.put("timed_out", p.timedOut());
        m.put("resumed", false);
        String note = p.note();
        if (p.stdoutDropped() + p.stderrDropped() > 0) {
            note = (note == null ? "" : note + "; ") + (p.stdoutDropped() + p.stderrDropped())
                    + " bytes of output were older than the last MiB kept and are gone";
        }
        m.put("note", note);
        m.put("process", p.process());
        m.put("pid", p.pid());
        m.put("running", p.running());
        m.put("stdout_next", p.stdoutNext());
        m.put("stderr_next", p.stderrNext());
        return m;
    }

    static Map<String, Object> park(ParkResult r) {
        Map<String, Object> m = workspace(r.workspace());
        m.put("memory_kept", r.memoryKept());
        m.put("already_parked", r.alreadyParked());
        m.put("state_bytes", r.stateBytes());
        m.put("duration_ms", r.durationMs());
        m.put("note", r.note());
        return m;
    }

    static Map<String, Object> snapshot(SnapshotInfo s) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("snapshot", s.id());
        m.put("name", s.name());
        m.put("workspace", s.workspaceId());
        m.put("isolation", s.isolation());
        m.put("memory_kept", s.memoryKept());
        m.put("state_bytes", s.stateBytes());
        m.put("created_at", s.createdAt().toString());
        if (!s.dependents().isEmpty()) m.put("dependents", s.dependents());
        return m;
    }

    static Map<String, Object> close(CloseResult r) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("workspace", r.workspace());
        m.put("name", r.name());
        m.put("lifecycle", r.lifecycle().wireName());
        m.put("deleted", r.deleted());
        m.put("note", r.note());
        return m;
    }
}
