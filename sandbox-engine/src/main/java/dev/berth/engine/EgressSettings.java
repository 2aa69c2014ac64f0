package dev.berth.engine;

import dev.berth.proxy.EgressProxy;
import dev.berth.proxy.Policy;
import java.util.Objects;

/**
 * The egress proxy workspaces reach the outside through, and the operator's ceiling policy. Without it (null in
 * {@link EngineConfig}) every connection from a workspace is refused.
 */
public record EgressSettings(EgressProxy proxy, Policy ceiling) {
    public EgressSettings {
        Objects.requireNonNull(proxy, "proxy");
        Objects.requireNonNull(ceiling, "ceiling");
    }
}
