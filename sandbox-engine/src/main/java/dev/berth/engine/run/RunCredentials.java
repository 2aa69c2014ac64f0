package dev.berth.engine.run;

import dev.berth.engine.api.EngineConfig;
import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.EngineException.Kind;
import dev.berth.engine.api.SecretUse;
import dev.berth.engine.api.Tenant;
import dev.berth.engine.workspace.Workspace;
import dev.berth.proxy.CredentialGrant;
import dev.berth.proxy.policy.SecretBinding;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;

/**
 * Per-run credentials: checks the secret bindings a workspace asks for at open against the operator's bindings and
 * the tenant's grant, and mints each run's placeholders (revoked when the run returns). The real values live only in
 * the egress proxy. Thread-safe, stateless apart from the configuration.
 */
public final class RunCredentials {
    private final EngineConfig config;

    public RunCredentials(EngineConfig config) { this.config = config; }

    /** The secret bindings configured on this server (by name), empty without egress. */
    private Map<String, SecretBinding> bindings() {
        return config.egress() == null ? Map.of() : config.egress().secrets();
    }

    /** Validates the bindings asked for at open: each must be configured and granted to the tenant. */
    public List<String> checkOpen(Tenant tenant, List<String> requested) throws EngineException {
        if (requested == null || requested.isEmpty()) return List.of();
        var configured = bindings();
        List<String> available = configured.keySet().stream().filter(tenant::maySecret).sorted().toList();
        LinkedHashSet<String> out = new LinkedHashSet<>();
        for (String n : requested) {
            if (n == null || !configured.containsKey(n) || !tenant.maySecret(n)) {
                throw new EngineException(Kind.INVALID_ARGUMENT, "no secret binding '" + n + "' is available to you; "
                        + (available.isEmpty() ? "the operator has bound none for you (operator config: egress.secrets"
                        + " and the tenant's secrets)" : "available: " + String.join(", ", available)));
            }
            out.add(n);
        }
        return List.copyOf(out);
    }

    /** One run's placeholders (or none), and what it reports at the end. */
    record Grant(CredentialGrant grant, Runner.Injected injected, String skipped) {
        void revoke() {
            if (grant != null) grant.close();
        }

        /** The bindings this run got placeholders for (names only). */
        List<String> bindings() {
            return grant == null ? List.of() : List.copyOf(injected.bindingByEnv().values().stream().sorted().toList());
        }

        List<SecretUse> used() {
            if (grant == null) return List.of();
            return grant.uses().stream().map(u -> new SecretUse(u.binding(), u.host(), u.count())).toList();
        }

        String note() {
            List<SecretUse> u = used();
            String said = u.isEmpty() ? null : "the egress proxy injected " + u.stream()
                    .map(x -> "secret '" + x.secret() + "' into " + x.count() + " request(s) to " + x.host())
                    .reduce((a, b) -> a + ", " + b).orElse("");
            if (skipped == null) return said;
            return said == null ? skipped : said + "; " + skipped;
        }
    }

    /**
     * Mints this run's placeholders: the workspace's bindings, narrowed by the run's {@code secrets} (null = all), less
     * any the operator has since removed or withdrawn from the tenant (said in the note, never an error).
     */
    Grant mint(Tenant tenant, Workspace ws, String runId, List<String> narrowing) throws EngineException {
        if (narrowing != null) {
            for (String n : narrowing) {
                if (!ws.secrets.contains(n)) {
                    throw new EngineException(Kind.INVALID_ARGUMENT, "secret '" + n + "' is not bound to workspace '" + ws.label()
                            + "'" + (ws.secrets.isEmpty() ? " (it has none; ask for them with open_workspace {secrets})"
                            : "; its secrets are " + String.join(", ", ws.secrets)) + ". A run can only narrow them");
                }
            }
        }
        boolean trust = config.egress() != null && (!ws.secrets.isEmpty() || config.egress().proxy().interceptsForEveryWorkspace());
        Map<String, String> defaults = trust ? TrustBundle.environment() : Map.of();
        var configured = bindings();
        List<String> names = new ArrayList<>();
        List<String> gone = new ArrayList<>();
        for (String n : narrowing == null ? ws.secrets : narrowing) {
            if (configured.containsKey(n) && tenant.maySecret(n)) names.add(n); else gone.add(n);
        }
        String skipped = gone.isEmpty() ? null : "secret binding(s) " + String.join(", ", gone)
                + " are no longer configured for you, so this run went without them";
        CredentialGrant grant = ws.egress.mint(runId, names); // null: nothing to mint, or no proxy
        if (grant == null) return new Grant(null, new Runner.Injected(defaults, Map.of(), Map.of()), skipped);
        Map<String, String> byEnv = new HashMap<>();
        for (String n : names) byEnv.put(configured.get(n).env(), n);
        return new Grant(grant, new Runner.Injected(defaults, grant.environment(), byEnv), skipped);
    }
}
