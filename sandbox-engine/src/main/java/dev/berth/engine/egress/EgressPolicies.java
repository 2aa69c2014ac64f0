package dev.berth.engine.egress;

import dev.berth.engine.api.EngineConfig;
import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.EngineException.Kind;
import dev.berth.proxy.policy.Policy;
import java.util.List;

/** The egress policy of a workspace or run: the operator's ceiling, narrowed by what was asked for. Stateless. */
public final class EgressPolicies {
    private EgressPolicies() {}

    /** The operator's ceiling narrowed by {@code requested} (null = the whole ceiling). */
    public static Policy forWorkspace(EngineConfig config, List<String> requested) throws EngineException {
        Policy ceiling = config.egress() == null ? Policy.denyAll() : config.egress().ceiling();
        return requested == null ? ceiling : ceiling.narrow(parse(config, requested));
    }

    /**
     * Allowlist entries as a policy ({@code preset:NAME} standing for the operator's mirror of it where there is one),
     * or INVALID_ARGUMENT naming the bad entry.
     */
    public static Policy parse(EngineConfig config, List<String> entries) throws EngineException {
        try {
            return Policy.of(entries, config.egress() == null ? java.util.Map.of() : config.egress().presetMirrors());
        } catch (IllegalArgumentException e) {
            throw new EngineException(Kind.INVALID_ARGUMENT, "egress: " + e.getMessage());
        }
    }
}
