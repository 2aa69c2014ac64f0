package dev.berth.engine.api;

import dev.berth.proxy.EgressProxy;
import dev.berth.proxy.policy.Policy;
import dev.berth.proxy.policy.SecretBinding;
import java.util.Map;
import java.util.Objects;

/**
 * The egress proxy workspaces reach the outside through, the operator's ceiling policy, and the operator's secret
 * bindings (the proxy holds their values; the engine only needs names and variable names), and the operator's preset
 * mirrors ({@code preset:NAME} in a workspace's, run's or recipe's allowlist stands for them). Without it (null in
 * {@link EngineConfig}) every connection from a workspace is refused.
 */
public record EgressSettings(EgressProxy proxy, Policy ceiling, Map<String, SecretBinding> secrets,
                             Map<String, Policy> presetMirrors) {
    public EgressSettings {
        Objects.requireNonNull(proxy, "proxy");
        Objects.requireNonNull(ceiling, "ceiling");
        secrets = secrets == null ? Map.of() : java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(secrets));
        presetMirrors = presetMirrors == null ? Map.of() : Map.copyOf(presetMirrors);
    }

    public EgressSettings(EgressProxy proxy, Policy ceiling, Map<String, SecretBinding> secrets) {
        this(proxy, ceiling, secrets, Map.of());
    }

    public EgressSettings(EgressProxy proxy, Policy ceiling) {
        this(proxy, ceiling, Map.of());
    }
}
