package dev.berth.mcp.tools;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonUnwrapped;
import dev.berth.engine.api.AgentConfigChange;
import dev.berth.engine.api.CloseResult;
import dev.berth.engine.api.EgressDenial;
import dev.berth.engine.api.EgressFiltered;
import dev.berth.engine.api.OpenResult;
import dev.berth.engine.api.ParkResult;
import dev.berth.engine.api.ProcessStatus;
import dev.berth.engine.api.RunResult;
import dev.berth.engine.api.SecretUse;
import dev.berth.engine.api.SnapshotInfo;
import dev.berth.engine.api.WorkspaceInfo;
import dev.berth.engine.spi.DriverCapabilities;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import tools.jackson.core.type.TypeReference;
import tools.jackson.databind.PropertyNamingStrategies;
import tools.jackson.databind.json.JsonMapper;

/**
 * The structured content of tool results, as the output schemas in tool-schemas/ describe it: one record per result
 * shape, serialized by Jackson with snake_case names. Components marked {@code NON_NULL} are left out when absent;
 * every other component is always present (null when it has no value), as the schemas require. The methods return
 * mutable maps because a few tools add to a result (exposed ports, a deletion flag).
 */
public final class Results {
    private Results() {}

    private static final JsonMapper MAPPER = JsonMapper.builder()
            .propertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE).build();
    private static final TypeReference<LinkedHashMap<String, Object>> MAP = new TypeReference<>() {};

    private static Map<String, Object> map(Object result) {
        return MAPPER.convertValue(result, MAP);
    }

    private static String text(Instant t) { return t == null ? null : t.toString(); }

    record Image(String name, String digest) {}

    record Capabilities(String boundary, boolean ownKernel, boolean parkKeepsMemory, boolean snapshotKeepsMemory,
                        String accelerator) {
        static Capabilities of(DriverCapabilities c) {
            return new Capabilities(c.boundary(), c.ownKernel(), c.parkKeepsMemory(), c.snapshotKeepsMemory(), c.accelerator());
        }
    }

    /** The resources asked for; each I/O limit 0 when none is set. */
    record ResourcesOut(int vcpus, @JsonProperty("memory_mib") int memoryMiB, @JsonProperty("disk_mib") int diskMiB,
                        int maxPids, long ioReadBps, long ioWriteBps, long ioReadIops, long ioWriteIops) {
        static ResourcesOut of(dev.berth.engine.spi.Resources r) {
            var io = r.io();
            return new ResourcesOut(r.vcpus(), r.memoryMiB(), r.diskMiB(), r.maxPids(), io.value("io_read_bps"),
                    io.value("io_write_bps"), io.value("io_read_iops"), io.value("io_write_iops"));
        }
    }

    record LimitOut(String name, long value, String unit, boolean enforced, String how) {
        static LimitOut of(dev.berth.engine.spi.Limit l) {
            return new LimitOut(l.name(), l.value(), l.unit(), l.enforced(), l.how());
        }
    }

    record Workspace(String workspace, String name, String lifecycle, String isolation, String state,
                     Capabilities capabilities, String createdAt, String lastUsedAt, String fromSnapshot, int activeRuns,
                     List<String> egressPolicy, List<String> secrets,
                     @JsonInclude(JsonInclude.Include.NON_NULL) String recovered,
                     @JsonInclude(JsonInclude.Include.NON_NULL) String idleParkAt,
                     @JsonInclude(JsonInclude.Include.NON_NULL) String expiresAt,
                     ResourcesOut resources, List<LimitOut> limits,
                     @JsonInclude(JsonInclude.Include.NON_NULL) Image image) {
        static Workspace of(WorkspaceInfo w) {
            return new Workspace(w.id(), w.name(), w.lifecycle().wireName(), w.isolation(), w.state().wireName(),
                    Capabilities.of(w.capabilities()), text(w.createdAt()), text(w.lastUsedAt()), w.fromSnapshot(),
                    w.activeRuns(), w.egressPolicy(), w.secrets(), w.recovered(), text(w.idleParkAt()),
                    text(w.expiresAt()), ResourcesOut.of(w.resources()), w.limits().stream().map(LimitOut::of).toList(),
                    w.image() == null ? null : new Image(w.image().name(), w.image().digest()));
        }
    }

    record Open(@JsonUnwrapped Workspace workspace, boolean created, boolean resumed, String note,
                @JsonInclude(JsonInclude.Include.NON_NULL) String pool) {
        static Open of(OpenResult r, String note) {
            return new Open(Workspace.of(r.workspace()), r.created(), r.resumed(), note, r.pool());
        }
    }

    record OpenMany(@JsonUnwrapped Open first, List<Open> forks) {}

    record ImageOut(String name, String digest, long bytes, long baseDiskBytes, List<String> drivers, String origin,
                    String importedAt) {}

    record Run(String workspace, int exitCode, int signal, String stdout, String stderr, long stdoutBytes,
               long stderrBytes, boolean stdoutTruncated, boolean stderrTruncated, long durationMs, boolean timedOut,
               boolean resumed, String note, List<AgentConfigChange> agentConfigChanges, List<EgressDenial> egressDenied,
               @JsonInclude(JsonInclude.Include.NON_EMPTY) List<EgressFiltered> egressFiltered,
               @JsonInclude(JsonInclude.Include.NON_NULL) String recovered,
               @JsonInclude(JsonInclude.Include.NON_NULL) String idleParkAt,
               @JsonInclude(JsonInclude.Include.NON_NULL) String expiresAt,
               @JsonInclude(JsonInclude.Include.NON_EMPTY) List<SecretUse> secretsUsed,
               @JsonInclude(JsonInclude.Include.NON_NULL) String runId,
               @JsonInclude(JsonInclude.Include.NON_NULL) Map<String, Object> receipt,
               @JsonInclude(JsonInclude.Include.NON_EMPTY) List<RunResult.StoppedProcess> stoppedProcesses) {}

    /** A background process, in the run result's shape (exit_code null while it runs). */
    record Process(String workspace, Integer exitCode, int signal, String stdout, String stderr, long stdoutBytes,
                   long stderrBytes, boolean stdoutTruncated, boolean stderrTruncated, long durationMs, boolean timedOut,
                   boolean resumed, String note, String process, int pid, boolean running, long stdoutNext,
                   long stderrNext, @JsonInclude(JsonInclude.Include.NON_NULL) String screen) {}

    record Park(@JsonUnwrapped Workspace workspace, boolean memoryKept, boolean alreadyParked, long stateBytes,
                long durationMs, String note) {}

    record Snapshot(String snapshot, String name, String workspace, String isolation, boolean memoryKept,
                    long stateBytes, String createdAt, @JsonInclude(JsonInclude.Include.NON_EMPTY) List<String> dependents) {}

    record Close(String workspace, String name, String lifecycle, boolean deleted, String note) {}

    public static Map<String, Object> workspace(WorkspaceInfo w) {
        return map(Workspace.of(w));
    }

    public static Map<String, Object> image(dev.berth.engine.image.ImageInfo i) {
        return map(new ImageOut(i.name(), i.digest(), i.bytes(), i.baseDiskBytes(), i.drivers(), i.origin(), i.importedAt()));
    }

    public static Map<String, Object> open(OpenResult r) {
        return map(Open.of(r, r.note()));
    }

    /** open_workspace with count: the first workspace as the result, and every one of them under {@code forks}. */
    public static Map<String, Object> openMany(List<OpenResult> all) {
        OpenResult first = all.getFirst();
        String note = all.size() > 1
                ? "forked " + all.size() + " workspaces from snapshot '" + first.workspace().fromSnapshot()
                  + "' (this one and " + (all.size() - 1) + " more, all listed in forks)"
                : first.note();
        return map(new OpenMany(Open.of(first, note), all.stream().map(r -> Open.of(r, r.note())).toList()));
    }

    public static Map<String, Object> run(RunResult r) {
        return map(new Run(r.workspace(), r.exitCode(), r.signal(), r.stdout(), r.stderr(), r.stdoutBytes(),
                r.stderrBytes(), r.stdoutTruncated(), r.stderrTruncated(), r.durationMs(), r.timedOut(), r.resumed(),
                r.note(), r.agentConfigChanges(), r.egressDenied(), r.egressFiltered(), r.recovered(),
                text(r.idleParkAt()), text(r.expiresAt()), r.secretsUsed(), r.runId(), r.receipt(), r.stoppedProcesses()));
    }

    public static Map<String, Object> process(ProcessStatus p) {
        String note = p.note();
        if (p.stdoutDropped() + p.stderrDropped() > 0) {
            note = (note == null ? "" : note + "; ") + (p.stdoutDropped() + p.stderrDropped())
                    + " bytes of output were older than the last MiB kept and are gone";
        }
        return map(new Process(p.workspace(), p.exitCode(), p.signal(), p.stdout(), p.stderr(), p.stdoutNext(),
                p.stderrNext(), p.stdoutDropped() > 0, p.stderrDropped() > 0, p.durationMs(), p.timedOut(), false, note,
                p.process(), p.pid(), p.running(), p.stdoutNext(), p.stderrNext(), p.screen()));
    }

    public static Map<String, Object> park(ParkResult r) {
        return map(new Park(Workspace.of(r.workspace()), r.memoryKept(), r.alreadyParked(), r.stateBytes(),
                r.durationMs(), r.note()));
    }

    public static Map<String, Object> snapshot(SnapshotInfo s) {
        return map(new Snapshot(s.id(), s.name(), s.workspaceId(), s.isolation(), s.memoryKept(), s.stateBytes(),
                text(s.createdAt()), s.dependents()));
    }

    public static Map<String, Object> close(CloseResult r) {
        return map(new Close(r.workspace(), r.name(), r.lifecycle().wireName(), r.deleted(), r.note()));
    }
}
