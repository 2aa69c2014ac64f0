package dev.berth.proxy;

import dev.berth.proxy.credentials.RunGrant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Placeholders minted for one run ({@link EgressProxy#mint}). The engine puts {@link #environment()}
 * into the command's environment and closes the grant when the run returns; from then on the
 * placeholders inject nothing (requests carrying them are refused).
 *
 * <p>Thread-safe: uses are counted from proxy event loops while the engine reads them.
 */
public final class CredentialGrant implements AutoCloseable {
    private final RunGrant grant;

    CredentialGrant(RunGrant grant) {
        this.grant = grant;
    }

    /** Environment variable name -> placeholder, e.g. {@code GITHUB_TOKEN -> berth-secret-github-<32 hex>}. */
    public Map<String, String> environment() {
        return grant.environment();
    }

    /** What was injected so far, per (binding, host), in first-use order. */
    public List<CredentialUse> uses() {
        List<CredentialUse> out = new ArrayList<>();
        for (RunGrant.Use u : grant.uses()) out.add(new CredentialUse(u.binding(), u.host(), u.count()));
        return out;
    }

    /**
     * Revokes the placeholders and closes every connection opened under this grant (those of its run, and any that
     * carried one of its placeholders), so in-flight and streamed requests end with the run. Idempotent; requests
     * carrying the placeholders afterwards are refused.
     */
    @Override
    public void close() {
        grant.close();
    }

    /** True once the grant was revoked because its lifetime ran out (rather than closed by its run). */
    public boolean expired() { return grant.expired(); }

    public String workspaceId() { return grant.workspaceId(); }
    public String runId() { return grant.runId(); }
    String placeholder(String binding) { return grant.placeholder(binding); }

    @Override
    public String toString() {
        return grant.toString();
    }
}
