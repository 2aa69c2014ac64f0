package dev.berth.engine;

import java.util.Objects;
import java.util.regex.Pattern;

/**
 * Who owns a workspace. Every engine operation is done on behalf of one tenant and sees only that tenant's
 * workspaces and snapshots: another tenant's workspace is "not found", exactly like one that does not exist, so ids
 * and names leak nothing. stdio serves the single {@link #LOCAL} tenant.
 */
public record Tenant(String id, Quota quota) {
    private static final Pattern ID = Pattern.compile("[a-z0-9][a-z0-9._-]{0,62}");
    public static final Tenant LOCAL = new Tenant("local", Quota.UNLIMITED);

    public Tenant {
        Objects.requireNonNull(quota, "quota");
        if (id == null || !ID.matcher(id).matches()) {
            throw new IllegalArgumentException("tenant id '" + id + "' must be 1-63 of a-z, 0-9, '.', '_', '-'");
        }
    }

    /**
     * Per-tenant ceilings over its live (not closed) workspaces.
     *
     * @param workspaces live workspaces at most
     * @param vcpus      summed over running workspaces
     * @param memoryMiB  summed over running workspaces
     * @param diskMiB    summed over all live workspaces
     */
    public record Quota(int workspaces, int vcpus, int memoryMiB, long diskMiB) {
        public static final Quota UNLIMITED = new Quota(Integer.MAX_VALUE, Integer.MAX_VALUE, Integer.MAX_VALUE, Long.MAX_VALUE);
    }
}
