package dev.berth.engine.metrics;

import dev.berth.proxy.audit.AuditRecord;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.composite.CompositeMeterRegistry;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Locale;
import java.util.function.ToLongBiFunction;
import java.util.function.ToLongFunction;

/**
 * The engine's meters, named once here (Micrometer names; the Prometheus registry spells them with underscores and
 * unit suffixes): {@code berth.workspaces{state,isolation}}, {@code berth.sandboxes{isolation}},
 * {@code berth.qemu.processes}, {@code berth.workspace.operations{op,isolation,outcome}} (open, fork, park, resume,
 * snapshot, close; latency histogram), {@code berth.runs{isolation,outcome}} (duration histogram),
 * {@code berth.egress.decisions{decision,reason}} (reason is a small fixed set of categories, never the free text,
 * which names hosts). Thread-safe; owns nothing but its meters.
 */
public final class EngineMetrics {
    /** Categories of egress decisions; the first whose words appear in the reason wins. */
    static final List<String[]> REASONS = List.of(
            new String[] {"credential", "credential", "placeholder"},
            new String[] {"sni", "SNI"},
            new String[] {"dns", "DNS resolution", "resolved to no addresses"},
            new String[] {"address", "refused: loopback", "private", "link-local", "metadata", "CGNAT", "multicast",
                    "unspecified", "broadcast", "IP literal", "zone id", "refused: reserved", "documentation"},
            new String[] {"quota", "quota", "limit of", "tunnels"},
            new String[] {"policy", "allowlist", "not allowed", "no egress is configured", "allow-list"},
            new String[] {"request", "malformed", "refused: ", "must be", "Transfer-Encoding", "Content-Length", "header"},
            new String[] {"intercepted", "TLS intercepted"});

    private final MeterRegistry registry;

    public EngineMetrics(MeterRegistry registry) {
        this.registry = registry;
    }

    /** Meters that go nowhere (a library user or stdio without a registry). */
    public static EngineMetrics none() {
        return new EngineMetrics(new CompositeMeterRegistry());
    }

    public MeterRegistry registry() { return registry; }

    /**
     * Registers the state gauges: workspaces per (state, isolation), running sandboxes per isolation, and QEMU processes
     * (children of this JVM whose command is a qemu-system binary: counted, not inferred).
     */
    public void gauges(Collection<String> states, Collection<String> isolations, ToLongBiFunction<String, String> workspaces,
                       ToLongFunction<String> sandboxes) {
        for (String iso : isolations) {
            for (String st : states) {
                Gauge.builder("berth.workspaces", () -> workspaces.applyAsLong(st, iso)).description("workspaces by state and isolation")
                        .tag("state", st).tag("isolation", iso).register(registry);
            }
            Gauge.builder("berth.sandboxes", () -> sandboxes.applyAsLong(iso)).description("running sandboxes by isolation")
                    .tag("isolation", iso).register(registry);
        }
        Gauge.builder("berth.qemu.processes", EngineMetrics::qemuProcesses).description("QEMU processes started by this server")
                .register(registry);
    }

    private static long qemuProcesses() {
        return ProcessHandle.current().descendants()
                .filter(p -> p.info().command().map(c -> c.contains("qemu-system")).orElse(false)).count();
    }

    /** A lifecycle operation (open, fork, park, resume, snapshot, close) took {@code nanos}. */
    public void operation(String op, String isolation, long nanos, boolean ok) {
        Timer.builder("berth.workspace.operations").description("workspace lifecycle operations and their latency")
                .tag("op", op).tag("isolation", isolation).tag("outcome", ok ? "ok" : "error")
                .publishPercentileHistogram().minimumExpectedValue(Duration.ofMillis(1)).maximumExpectedValue(Duration.ofMinutes(2))
                .register(registry).record(Duration.ofNanos(nanos));
    }

    /** A foreground run ended: {@code outcome} is "exit_0", "exit_nonzero", "timeout" or "error". */
    public void run(String isolation, long nanos, String outcome) {
        Timer.builder("berth.runs").description("foreground runs and their duration")
                .tag("isolation", isolation).tag("outcome", outcome)
                .publishPercentileHistogram().minimumExpectedValue(Duration.ofMillis(1)).maximumExpectedValue(Duration.ofHours(1))
                .register(registry).record(Duration.ofNanos(nanos));
    }

    /** One egress decision from the proxy's audit stream (called on proxy threads; cheap). */
    public void egress(AuditRecord r) {
        if (!"decision".equals(r.event())) return;
        boolean allowed = "allow".equals(r.decision());
        Counter.builder("berth.egress.decisions").description("egress decisions by outcome and reason category")
                .tag("decision", allowed ? "allow" : "deny").tag("reason", reason(r.reason(), allowed))
                .register(registry).increment();
    }

    static String reason(String reason, boolean allowed) {
        if (reason == null) return allowed ? "allowed" : "other";
        if (allowed) return reason.contains("TLS intercepted") ? "intercepted" : reason.contains("injected credential") ? "credential_injected" : "allowed";
        for (String[] c : REASONS) {
            for (int i = 1; i < c.length; i++) {
                if (reason.contains(c[i]) || reason.toLowerCase(Locale.ROOT).contains(c[i].toLowerCase(Locale.ROOT))) return c[0];
            }
        }
        return "other";
    }
}
