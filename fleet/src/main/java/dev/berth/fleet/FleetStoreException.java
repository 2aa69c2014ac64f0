package dev.berth.fleet;

/**
 * The fleet store could not do what was asked: unreachable, no quorum, a refused request. The message names the
 * endpoint and the store's own reason. {@link #unavailable()} tells a store that cannot be reached (retry elsewhere,
 * fence) from one that answered with a refusal.
 */
public final class FleetStoreException extends RuntimeException {
    private final boolean unavailable;

    public FleetStoreException(String message, boolean unavailable, Throwable cause) {
        super(message, cause);
        this.unavailable = unavailable;
    }

    public boolean unavailable() { return unavailable; }
}
