package dev.berth.proxy;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Placeholders minted for one run ({@link EgressProxy#mint}). The engine puts {@link #environment()}
 * into the command's environment and closes the grant when the run returns; from then on the
 * placeholders inject nothing (requests carrying them are refused).
 *
 * <p>Thread-safe: uses are counted from proxy event loops while the engine reads them.
 */
public final class CredentialGrant implements AutoCloseable {
    private final CredentialRegistry registry;
    private final String workspaceId;
    private final String runId;
    /** binding name -> placeholder, in binding order. */
    private final Map<String, String> placeholders;
    private final Map<String, String> environment;
    /** "binding\nhost" -> count, in first-use order. Guarded by itself. */
    private final Map<String, Integer> uses = new LinkedHashMap<>();
    private final AtomicBoolean closed = new AtomicBoolean();

    CredentialGrant(CredentialRegistry registry, String workspaceId, String runId, Map<SecretBinding, String> minted) {
        this.registry = registry;
        this.workspaceId = workspaceId;
        this.runId = runId;
        Map<String, String> p = new LinkedHashMap<>();
        Map<String, String> env = new LinkedHashMap<>();
        minted.forEach((b, ph) -> {
            p.put(b.name(), ph);
            env.put(b.env(), ph);
        });
        this.placeholders = Collections.unmodifiableMap(p);
        this.environment = Collections.unmodifiableMap(env);
    }

    /** Environment variable name -> placeholder, e.g. {@code GITHUB_TOKEN -> berth-secret-github-<32 hex>}. */
    public Map<String, String> environment() {
        return environment;
    }

    /** What was injected so far, per (binding, host), in first-use order. */
    public List<CredentialUse> uses() {
        synchronized (uses) {
            List<CredentialUse> out = new ArrayList<>(uses.size());
            uses.forEach((k, n) -> {
                int nl = k.indexOf('\n');
                out.add(new CredentialUse(k.substring(0, nl), k.substring(nl + 1), n));
            });
            return out;
        }
    }

    /** Revokes the placeholders. Idempotent; requests carrying them afterwards are refused. */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) registry.revoke(placeholders.values());
    }

    public String workspaceId() { return workspaceId; }
    public String runId() { return runId; }
    boolean isClosed() { return closed.get(); }
    String placeholder(String binding) { return placeholders.get(binding); }

    void used(String binding, String host) {
        synchronized (uses) {
            uses.merge(binding + "\n" + host, 1, Integer::sum);
        }
    }

    @Override
    public String toString() {
        return "CredentialGrant[workspace=" + workspaceId + ", run=" + runId + ", bindings=" + placeholders.keySet()
                + (closed.get() ? ", revoked" : "") + "]";
    }
}
