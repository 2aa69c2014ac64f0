package dev.berth.engine.api;

/**
 * When the engine parks or closes a workspace by itself: the operator's lifecycle policy (operator config
 * {@code lifecycle}, overridable per tenant). A workspace is idle when no tool call reached it, no foreground run is
 * in flight, and no background process wrote output or held an egress connection open, for the whole window; a
 * workspace is never parked or closed in the middle of a run.
 *
 * <p>Decision: {@code ttlSeconds} applies to ephemeral workspaces only. A timer that deletes (or stops) a persistent
 * workspace that is in use is the lifecycle complaint users raise most against peer products; persistent work is
 * parked when idle, never deleted by a timer.
 *
 * @param idleParkSeconds  a persistent workspace idle this long is parked (0 = never)
 * @param idleCloseSeconds an ephemeral workspace idle this long is closed and deleted (0 = never)
 * @param ttlSeconds       an ephemeral workspace is closed this long after it was opened, idle or not, at the end of
 *                         its run if one is in flight (0 = no limit)
 */
public record LifecyclePolicy(long idleParkSeconds, long idleCloseSeconds, long ttlSeconds) {
    public static final LifecyclePolicy DEFAULT = new LifecyclePolicy(900, 3600, 0);

    public LifecyclePolicy {
        if (idleParkSeconds < 0 || idleCloseSeconds < 0 || ttlSeconds < 0) {
            throw new IllegalArgumentException("lifecycle times must be >= 0 (0 = never), got idle_park_s " + idleParkSeconds
                    + ", idle_close_s " + idleCloseSeconds + ", ttl_s " + ttlSeconds);
        }
    }

    /** This policy with the fields {@code override} sets (null fields keep this policy's). */
    public LifecyclePolicy with(Long idlePark, Long idleClose, Long ttl) {
        return new LifecyclePolicy(idlePark == null ? idleParkSeconds : idlePark, idleClose == null ? idleCloseSeconds : idleClose,
                ttl == null ? ttlSeconds : ttl);
    }
}
