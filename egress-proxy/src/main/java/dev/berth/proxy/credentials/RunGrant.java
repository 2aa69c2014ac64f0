package dev.berth.proxy.credentials;

import dev.berth.proxy.policy.SecretBinding;
import dev.berth.proxy.session.Session;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Placeholders minted for one run, as the proxy keeps them (the engine holds them through the public
 * {@code CredentialGrant}): the placeholders, the uses counted so far, and the sessions that carried one. Once closed
 * or expired the placeholders inject nothing (requests carrying them are refused) and those sessions are closed.
 *
 * <p>Thread-safe: uses are counted from proxy event loops while the engine reads them.
 */
public final class RunGrant implements AutoCloseable {
    /** How often one binding's value was injected into requests to one host. */
    public record Use(String binding, String host, int count) {}

    private final CredentialRegistry registry;
    private final String workspaceId;
    private final String runId;
    /** binding name -> placeholder, in binding order. */
    private final Map<String, String> placeholders;
    private final Map<String, String> environment;
    /** "binding\nhost" -> count, in first-use order. Guarded by itself. */
    private final Map<String, Integer> uses = new LinkedHashMap<>();
    private final AtomicBoolean closed = new AtomicBoolean();
    private volatile boolean expired;
    /** Client sessions that carried one of these placeholders and are still open. */
    private final java.util.Set<Session> sessions = java.util.concurrent.ConcurrentHashMap.newKeySet();

    RunGrant(CredentialRegistry registry, String workspaceId, String runId, Map<SecretBinding, String> minted) {
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
    public List<Use> uses() {
        synchronized (uses) {
            List<Use> out = new ArrayList<>(uses.size());
            uses.forEach((k, n) -> {
                int nl = k.indexOf('\n');
                out.add(new Use(k.substring(0, nl), k.substring(nl + 1), n));
            });
            return out;
        }
    }

    /**
     * Revokes the placeholders and closes every connection opened under this grant (those of its run, and any that
     * carried one of its placeholders), so in-flight and streamed requests end with the run. Idempotent; requests
     * carrying the placeholders afterwards are refused.
     */
    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            registry.revoke(this, placeholders.values(), "credential grant of run '" + runId + "' was revoked (its run ended)");
        }
    }

    /** The operator's placeholder lifetime ran out: revoke, with a reason that says so. */
    void expire() {
        if (closed.get()) return;
        expired = true;
        if (closed.compareAndSet(false, true)) {
            registry.revoke(this, placeholders.values(), CredentialRegistry.expired(this));
        }
    }

    /** True once the grant was revoked because its lifetime ran out (rather than closed by its run). */
    public boolean expired() { return expired; }

    public String workspaceId() { return workspaceId; }
    public String runId() { return runId; }
    public boolean isClosed() { return closed.get(); }
    public String placeholder(String binding) { return placeholders.get(binding); }

    public void usedBy(Session s) {
        if (s.client() != null && sessions.add(s)) s.client().closeFuture().addListener(f -> sessions.remove(s));
        if (closed.get()) s.revoke("credential grant of run '" + runId + "' was revoked (its run ended)"); // lost the race with close
    }

    /** Sessions that carried one of these placeholders and are still open. */
    public java.util.Set<Session> sessions() { return sessions; }

    public void used(String binding, String host) {
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
