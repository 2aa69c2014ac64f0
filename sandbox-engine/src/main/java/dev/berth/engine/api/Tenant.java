package dev.berth.engine.api;

import java.util.Objects;
import java.util.regex.Pattern;

/**
 * Who owns a workspace. Every engine operation is done on behalf of one tenant and sees only that tenant's
 * workspaces and snapshots: another tenant's workspace is "not found", exactly like one that does not exist, so ids
 * and names leak nothing. stdio serves the single {@link #LOCAL} tenant.
 */
public record Tenant(String id, Quota quota, java.util.Set<String> secrets, Sizes sizes, java.util.Set<String> images) {
    private static final Pattern ID = Pattern.compile("[a-z0-9][a-z0-9._-]{0,62}");
    /** The stdio user: the operator themself, so every configured secret binding is theirs to use. */
    public static final Tenant LOCAL = new Tenant("local", Quota.UNLIMITED, null);

    /** A tenant that may open every imported image (the local user; library callers that grant by other means). */
    public Tenant(String id, Quota quota, java.util.Set<String> secrets, Sizes sizes) {
        this(id, quota, secrets, sizes, null);
    }

    /** A tenant with the standard workspace sizes (Berth's defaults, no per-workspace ceiling beyond the machine). */
    public Tenant(String id, Quota quota, java.util.Set<String> secrets) {
        this(id, quota, secrets, Sizes.STANDARD);
    }

    /** A tenant that may use no secret bindings. */
    public Tenant(String id, Quota quota) {
        this(id, quota, java.util.Set.of());
    }

    /**
     * @param secrets names of the operator's secret bindings this tenant's workspaces may ask for; null means every
     *                configured binding (the local stdio user), empty means none
     */
    public Tenant {
        Objects.requireNonNull(quota, "quota");
        if (sizes == null) sizes = Sizes.STANDARD;
        secrets = secrets == null ? null : java.util.Set.copyOf(secrets);
        images = images == null ? null : java.util.Set.copyOf(images);
        if (id == null || !ID.matcher(id).matches()) {
            throw new IllegalArgumentException("tenant id '" + id + "' must be 1-63 of a-z, 0-9, '.', '_', '-'");
        }
    }

    /**
     * May this tenant open the imported image named {@code name}? {@code images} null: every image (the local user);
     * otherwise the names granted, {@code "*"} for all.
     */
    public boolean mayImage(String name) {
        return images == null || images.contains(name) || images.contains("*");
    }

    /** May this tenant use the binding named {@code name}? */
    public boolean maySecret(String name) {
        return secrets == null || secrets.contains(name);
    }

    /**
     * Per-tenant ceilings over its live (not closed) workspaces.
     *
     * @param workspaces live workspaces at most
     * @param vcpus      summed over running workspaces
     * @param memoryMiB  summed over running workspaces
     * @param diskMiB    summed over all live workspaces
     * @param snapshots  snapshots kept at most
     * @param snapshotMiB bytes (MiB) all the tenant's snapshots may hold on disk
     */
    public record Quota(int workspaces, int vcpus, int memoryMiB, long diskMiB, int snapshots, long snapshotMiB) {
        public static final Quota UNLIMITED = new Quota(Integer.MAX_VALUE, Integer.MAX_VALUE, Integer.MAX_VALUE, Long.MAX_VALUE,
                Integer.MAX_VALUE, Long.MAX_VALUE);

        /** Workspace limits only; snapshots unlimited. */
        public Quota(int workspaces, int vcpus, int memoryMiB, long diskMiB) {
            this(workspaces, vcpus, memoryMiB, diskMiB, Integer.MAX_VALUE, Long.MAX_VALUE);
        }
    }

    /**
     * What one workspace of this tenant gets when it asks for nothing, and the most it may ask for (the operator's
     * per-workspace ceiling; null = only the machine's size and Berth's ranges bound it).
     */
    public record Sizes(dev.berth.engine.spi.Resources defaults, dev.berth.engine.spi.Resources max) {
        public static final Sizes STANDARD = new Sizes(dev.berth.engine.spi.Resources.DEFAULT, null);

        public Sizes {
            if (defaults == null) defaults = dev.berth.engine.spi.Resources.DEFAULT;
        }
    }
}
