package dev.berth.proxy;

import dev.berth.proxy.policy.Policy;
import dev.berth.proxy.session.Owner;
import java.util.Objects;
import java.util.Set;

/**
 * Who a connection belongs to and what it may reach.
 *
 * @param workspaceId owning workspace (quotas are per workspace; credential placeholders are
 *     honoured only on connections of the workspace they were minted for)
 * @param runId the run that opened the connection, or null if unknown
 * @param policy effective policy; must already be {@code ceiling.narrow(...)} of workspace/run
 *     requests. The proxy additionally intersects it with its own ceiling, so passing a wider
 *     policy cannot widen anything.
 * @param listener receives every decision made for connections attached with this context
 * @param secrets names of the secret bindings this workspace may use. Only these bindings' hosts
 *     are TLS-intercepted, and only these bindings' placeholders are substituted. Names that are
 *     not configured are ignored.
 * @param tenantId the tenant that owns the workspace, or null: the tenant's quotas (connection rate, bytes) are shared
 *     by all its workspaces and outlive them, so closing and reopening a workspace does not reset them
 * @param narrowing what the run itself narrowed its egress to (its {@code egress} request), or null if it did not: a
 *     human's approval grant for the workspace then reaches the connection only where the narrowing allows the target
 */
public record EgressContext(String workspaceId, String runId, Policy policy, DecisionListener listener, Set<String> secrets,
                            String tenantId, Policy narrowing) {
    public EgressContext {
        Objects.requireNonNull(workspaceId, "workspaceId");
        Objects.requireNonNull(policy, "policy");
        listener = listener == null ? d -> {} : listener;
        secrets = secrets == null ? Set.of() : Set.copyOf(secrets);
    }

    /** A context of no tenant whose run did not narrow its egress. */
    public EgressContext(String workspaceId, String runId, Policy policy, DecisionListener listener, Set<String> secrets) {
        this(workspaceId, runId, policy, listener, secrets, null, null);
    }

    /** A context without secrets: nothing is intercepted, no placeholder is honoured. */
    public EgressContext(String workspaceId, String runId, Policy policy, DecisionListener listener) {
        this(workspaceId, runId, policy, listener, Set.of());
    }

    /** The connection machinery's view of this context; decisions reach {@link #listener()} as {@link Decision}s. */
    Owner owner() {
        DecisionListener l = listener;
        return new Owner(workspaceId, runId, policy, secrets, (conn, kind, host, port, address, allowed, reason, at) ->
                l.onDecision(new Decision(workspaceId, runId, conn, kind, host, port, address, allowed, reason, at)), tenantId, narrowing);
    }
}
