package dev.berth.engine.api;

import dev.berth.engine.spi.IsolationDriver;
import java.nio.file.Path;
import java.time.InstantSource;
import java.util.List;
import java.util.Map;

/**
 * Engine settings.
 *
 * @param home                  where workspaces, snapshots, images and runtime files live
 * @param drivers               isolation drivers in order of preference (strongest first)
 * @param defaultIsolation      driver used when open_workspace names none; null = first available in {@code drivers}
 * @param requiredIsolation     if set, opening a workspace on any other driver is refused (e.g. "microvm" for
 *                              untrusted work); never silently substituted
 * @param defaultTimeoutSeconds run timeout when the caller gives none
 * @param maxTimeoutSeconds     ceiling for run timeouts
 * @param maxOutputBytes        per-stream output kept in a run result (head and tail)
 * @param lifecycle             when idle workspaces are parked or closed, and ephemeral ones expire
 * @param tenantLifecycle       per-tenant overrides of {@code lifecycle}, by tenant id
 * @param maxWorkspaces         live (not closed) workspaces at most, over all tenants
 * @param guard                 what happens when a run changes agent configuration files (.claude/, .mcp.json, ...)
 * @param egress                the egress proxy and the operator's ceiling policy; null = no way out at all
 * @param audit                 the audit trail runs, lifecycle events and egress decisions are recorded in (the engine
 *                              owns and closes it); null = the engine opens one in {@code home} (refusing on failure)
 * @param metrics               where the engine's meters go
 * @param templates             fork many and the warm pool: how many workspaces one open may fork; null = defaults
 * @param clock                 the time idle parking, TTLs, activity and preview expiry are measured in; null = the
 *                              system clock (tests pass one they advance by hand)
 */
public record EngineConfig(Path home, List<IsolationDriver> drivers, String defaultIsolation, String requiredIsolation,
                           int defaultTimeoutSeconds, int maxTimeoutSeconds, int maxOutputBytes,
                           LifecyclePolicy lifecycle, Map<String, LifecyclePolicy> tenantLifecycle, int maxWorkspaces,
                           GuardMode guard, EgressSettings egress,
                           dev.berth.engine.audit.AuditTrail audit, dev.berth.engine.metrics.EngineMetrics metrics,
                           TemplateSettings templates, InstantSource clock) {

    public static final int DEFAULT_MAX_WORKSPACES = dev.berth.schemas.Limits.intValue("workspaces.live_default_max");

    public EngineConfig {
        drivers = List.copyOf(drivers);
        if (drivers.isEmpty()) throw new IllegalArgumentException("at least one isolation driver is needed");
        lifecycle = lifecycle == null ? LifecyclePolicy.DEFAULT : lifecycle;
        tenantLifecycle = tenantLifecycle == null ? Map.of() : Map.copyOf(tenantLifecycle);
        if (metrics == null) metrics = dev.berth.engine.metrics.EngineMetrics.none();
        if (templates == null) templates = TemplateSettings.DEFAULT;
        if (clock == null) clock = InstantSource.system();
        if (maxWorkspaces < 1) throw new IllegalArgumentException("maxWorkspaces must be at least 1, got " + maxWorkspaces);
    }

    /** Settings on the system clock. */
    public EngineConfig(Path home, List<IsolationDriver> drivers, String defaultIsolation, String requiredIsolation,
                        int defaultTimeoutSeconds, int maxTimeoutSeconds, int maxOutputBytes,
                        LifecyclePolicy lifecycle, Map<String, LifecyclePolicy> tenantLifecycle, int maxWorkspaces,
                        GuardMode guard, EgressSettings egress,
                        dev.berth.engine.audit.AuditTrail audit, dev.berth.engine.metrics.EngineMetrics metrics,
                        TemplateSettings templates) {
        this(home, drivers, defaultIsolation, requiredIsolation, defaultTimeoutSeconds, maxTimeoutSeconds, maxOutputBytes,
                lifecycle, tenantLifecycle, maxWorkspaces, guard, egress, audit, metrics, templates, null);
    }

    public static EngineConfig defaults(Path home, List<IsolationDriver> drivers) {
        return new EngineConfig(home, drivers, null, null, dev.berth.schemas.Limits.intValue("run.timeout_s_default"),
                dev.berth.schemas.Limits.intValue("run.timeout_s_max"), dev.berth.schemas.Limits.intValue("run.output_bytes_default"), LifecyclePolicy.DEFAULT, Map.of(),
                DEFAULT_MAX_WORKSPACES, GuardMode.REPORT, null, null, null, null, null);
    }

    /** The lifecycle policy of a tenant's workspaces: its override, else the server's. */
    public LifecyclePolicy lifecycleOf(String tenant) {
        return tenantLifecycle.getOrDefault(tenant, lifecycle);
    }

    public EngineConfig withDefaultIsolation(String isolation) {
        return new EngineConfig(home, drivers, isolation, requiredIsolation, defaultTimeoutSeconds, maxTimeoutSeconds,
                maxOutputBytes, lifecycle, tenantLifecycle, maxWorkspaces, guard, egress, audit, metrics, templates, clock);
    }

    public EngineConfig withGuard(GuardMode mode) {
        return new EngineConfig(home, drivers, defaultIsolation, requiredIsolation, defaultTimeoutSeconds, maxTimeoutSeconds,
                maxOutputBytes, lifecycle, tenantLifecycle, maxWorkspaces, mode, egress, audit, metrics, templates, clock);
    }

    public EngineConfig withEgress(EgressSettings settings) {
        return new EngineConfig(home, drivers, defaultIsolation, requiredIsolation, defaultTimeoutSeconds, maxTimeoutSeconds,
                maxOutputBytes, lifecycle, tenantLifecycle, maxWorkspaces, guard, settings, audit, metrics, templates, clock);
    }

    /** The operator's lifecycle policy: server-wide, per-tenant overrides, and the cap on live workspaces. */
    public EngineConfig withLifecycle(LifecyclePolicy policy, Map<String, LifecyclePolicy> perTenant, int maxLive) {
        return new EngineConfig(home, drivers, defaultIsolation, requiredIsolation, defaultTimeoutSeconds, maxTimeoutSeconds,
                maxOutputBytes, policy, perTenant, maxLive, guard, egress, audit, metrics, templates, clock);
    }

    public EngineConfig withAudit(dev.berth.engine.audit.AuditTrail trail) {
        return new EngineConfig(home, drivers, defaultIsolation, requiredIsolation, defaultTimeoutSeconds, maxTimeoutSeconds,
                maxOutputBytes, lifecycle, tenantLifecycle, maxWorkspaces, guard, egress, trail, metrics, templates, clock);
    }

    public EngineConfig withMetrics(dev.berth.engine.metrics.EngineMetrics m) {
        return new EngineConfig(home, drivers, defaultIsolation, requiredIsolation, defaultTimeoutSeconds, maxTimeoutSeconds,
                maxOutputBytes, lifecycle, tenantLifecycle, maxWorkspaces, guard, egress, audit, m, templates, clock);
    }

    public EngineConfig withTemplates(TemplateSettings t) {
        return new EngineConfig(home, drivers, defaultIsolation, requiredIsolation, defaultTimeoutSeconds, maxTimeoutSeconds,
                maxOutputBytes, lifecycle, tenantLifecycle, maxWorkspaces, guard, egress, audit, metrics, t, clock);
    }

    /** The same settings measuring time on {@code c} (tests: a clock they advance by hand). */
    public EngineConfig withClock(InstantSource c) {
        return new EngineConfig(home, drivers, defaultIsolation, requiredIsolation, defaultTimeoutSeconds, maxTimeoutSeconds,
                maxOutputBytes, lifecycle, tenantLifecycle, maxWorkspaces, guard, egress, audit, metrics, templates, c);
    }
}
