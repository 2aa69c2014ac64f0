package dev.berth.proxy;

import java.util.Objects;

/**
 * Who a connection belongs to and what it may reach.
 *
 * @param workspaceId owning workspace (quotas are per workspace)
 * @param runId the run that opened the connection, or null if unknown
 * @param policy effective policy; must already be {@code ceiling.narrow(...)} of workspace/run
 *     requests. The proxy additionally intersects it with its own ceiling, so passing a wider
 *     policy cannot widen anything.
 * @param listener receives every decision made for connections attached with this context
 */
public record EgressContext(String workspaceId, String runId, Policy policy, DecisionListener listener) {
    public EgressContext {
        Objects.requireNonNull(workspaceId, "workspaceId");
        Objects.requireNonNull(policy, "policy");
        listener = listener == null ? d -> {} : listener;
    }
}
