package dev.berth.proxy.session;

import dev.berth.proxy.policy.Policy;
import java.time.Instant;
import java.util.Objects;
import java.util.Set;

/**
 * Who a connection belongs to and what it may reach, as the connection machinery sees it (the proxy builds one from
 * the public {@code EgressContext} of each attached or accepted connection). Immutable.
 *
 * @param workspaceId owning workspace
 * @param runId the run that opened the connection, or null if unknown
 * @param policy the connection's requested policy (narrowed to the operator's ceiling by the {@link Gatekeeper})
 * @param secrets names of the secret bindings this workspace may use
 * @param decisions receives every decision made for the connection
 * @param tenantId the tenant the workspace belongs to, or null: its quotas outlive the workspace
 * @param narrowing the run's own narrowing of the workspace's egress, or null: a human's approval grant (which widens
 *     the workspace) reaches such a connection only where the narrowing allows the target too
 */
public record Owner(String workspaceId, String runId, Policy policy, Set<String> secrets, Decisions decisions, String tenantId,
                    Policy narrowing) {
    public Owner(String workspaceId, String runId, Policy policy, Set<String> secrets, Decisions decisions) {
        this(workspaceId, runId, policy, secrets, decisions, null, null);
    }

    public Owner {
        Objects.requireNonNull(workspaceId, "workspaceId");
        Objects.requireNonNull(policy, "policy");
        secrets = secrets == null ? Set.of() : Set.copyOf(secrets);
        decisions = decisions == null ? (c, k, h, p, a, allowed, r, at) -> {} : decisions;
    }

    /** Where a connection's decisions go, one call per decision, from a proxy event loop; must not block. */
    @FunctionalInterface
    public interface Decisions {
        void decided(String connectionId, String kind, String host, int port, String address, boolean allowed,
                     String reason, Instant at);
    }
}
