package dev.berth.engine;

import dev.berth.engine.api.EngineConfig;
import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.Tenant;

import dev.berth.engine.api.EngineException.Kind;
import dev.berth.engine.workspace.Workspace;
import dev.berth.engine.workspace.WorkspaceRegistry;
import dev.berth.proxy.policy.ApprovalSettings;
import dev.berth.proxy.Approvals;
import dev.berth.proxy.policy.Policy;
import java.time.Duration;
import java.util.List;

/**
 * Human approval of egress, engine side: resolves a tenant's workspace and hands the proxy's {@link Approvals} the
 * workspace id, so a grant is always scoped to one workspace the caller owns. Asking the human is the caller's job
 * (the MCP layer uses elicitation); this class checks, records and grants. Grants end when the workspace closes
 * (the proxy ends them in {@code forgetWorkspace}). Thread-safe.
 */
public final class EgressApprovals {
    /**
     * One approvable target of one workspace.
     *
     * @param allowed the workspace's policy already allows it (nothing to ask)
     * @param active  the live grant for it, or null
     */
    public record Target(String workspaceId, String workspaceLabel, Approvals.Check check, boolean allowed, Approvals.Grant active) {}

    private final EngineConfig config;
    private final WorkspaceRegistry registry;

    EgressApprovals(EngineConfig config, WorkspaceRegistry registry) {
        this.config = config;
        this.registry = registry;
    }

    private Approvals approvals() {
        return config.egress() == null ? null : config.egress().proxy().approvals();
    }

    /** The operator's approval settings; {@link ApprovalSettings#NONE} without egress. */
    public ApprovalSettings settings() {
        Approvals a = approvals();
        return a == null ? ApprovalSettings.NONE : a.settings();
    }

    /** Whether {@code host:port} is approvable at all (no workspace involved); never throws. */
    public Approvals.Check check(String host, int port) {
        Approvals a = approvals();
        if (a == null) return new Approvals.Check(false, host, port, "no egress is configured on this server, so nothing can be approved");
        return a.check(host, port);
    }

    /**
     * The tenant's workspace {@code ref} and {@code host:port}: NOT_FOUND for another tenant's or an unknown workspace,
     * INVALID_ARGUMENT (with the reason) when the target is not approvable.
     */
    public Target target(Tenant tenant, String ref, String host, int port) throws EngineException {
        Workspace ws = registry.resolve(tenant, ref);
        Approvals.Check c = check(host, port);
        if (!c.approvable()) throw new EngineException(Kind.INVALID_ARGUMENT, c.reason());
        return target(ws, c);
    }

    /** The same for a workspace id the caller already resolved (a run's own workspace); null if it is gone. */
    public Target target(Tenant tenant, String ref, Approvals.Check c) {
        try {
            return target(registry.resolve(tenant, ref), c);
        } catch (EngineException e) {
            return null;
        }
    }

    private Target target(Workspace ws, Approvals.Check c) {
        Policy p = ws.egress.policy().narrow(Policy.of(List.of(hostPort(c))));
        return new Target(ws.id, ws.label(), c, !p.isEmpty(), approvals().active(ws.id, c.host(), c.port()));
    }

    private static String hostPort(Approvals.Check c) {
        return (c.host().contains(":") ? "[" + c.host() + "]" : c.host()) + ":" + c.port();
    }

    /** Audit: a human is being asked. */
    public void requested(Target t, String runId, String why) {
        approvals().requested(t.workspaceId(), runId, t.check(), why);
    }

    /** Audit: no grant (declined, cancelled, timed out, unusable answer, client cannot be asked). */
    public void notGranted(Target t, String runId, String outcome) {
        approvals().notGranted(t.workspaceId(), runId, t.check(), outcome);
    }

    /** Grants the workspace {@code t} for {@code ttl} (one of the operator's durations); audited. */
    public Approvals.Grant grant(Target t, String runId, Duration ttl, String how) throws EngineException {
        try {
            return approvals().grant(t.workspaceId(), runId, t.check(), ttl, how);
        } catch (IllegalArgumentException e) {
            throw new EngineException(Kind.INVALID_ARGUMENT, e.getMessage());
        }
    }
}
