package dev.berth.proxy.session;

import java.time.Duration;

/**
 * How the proxy shapes a workspace's and a tenant's egress beyond the per-workspace rate and byte quota in
 * {@link Settings}: the burst of connection setups, how long a setup over the rate (or a request while the byte quota
 * is used up) may wait for its turn before it is refused, and the tenant's own buckets, which outlive its workspaces
 * (closing and reopening a workspace does not reset them). Immutable.
 *
 * @param connectBurst connection setups a workspace may make at once (the bucket's size; it refills at
 *     {@code maxConnectsPerSecond})
 * @param maxDelay the longest a connection setup or request waits for its turn; one that would wait longer is refused
 * @param maxConnectsPerSecondPerTenant connection setups per second over all of a tenant's workspaces
 * @param connectBurstPerTenant the tenant's burst
 * @param maxBytesPerTenant bytes per quota window over all of a tenant's workspaces
 */
public record Shaping(int connectBurst, Duration maxDelay, int maxConnectsPerSecondPerTenant, int connectBurstPerTenant,
                      long maxBytesPerTenant) {
    /**
     * Defaults that let a real install of a large dependency tree through (npm opens hundreds of connections within a
     * few seconds: 790 packages met 274 refusals at the old 30 per second without burst): a burst of 1,000 and up to
     * 5 s of waiting before a refusal.
     */
    public static final Shaping DEFAULT = new Shaping(1000, Duration.ofSeconds(5), 400, 4000, 100L * 1024 * 1024 * 1024);

    public Shaping {
        if (connectBurst < 1 || connectBurstPerTenant < 1 || maxConnectsPerSecondPerTenant < 1 || maxBytesPerTenant < 1) {
            throw new IllegalArgumentException("shaping limits must be positive");
        }
        if (maxDelay.isNegative()) throw new IllegalArgumentException("maxShapingDelay must not be negative, got " + maxDelay);
    }
}
