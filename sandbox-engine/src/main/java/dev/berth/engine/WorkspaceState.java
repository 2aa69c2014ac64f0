package dev.berth.engine;

/**
 * Lifecycle states of a workspace. The legal moves are in {@link WorkspaceAction#check}; everything else is refused
 * by name.
 *
 * <pre>
 * creating -> running -> parking -> parked -> resuming -> running ... -> closed
 * </pre>
 */
public enum WorkspaceState {
    CREATING, RUNNING, PARKING, PARKED, RESUMING, CLOSED;

    /** Lower-case wire name used in tool results. */
    public String wireName() { return name().toLowerCase(java.util.Locale.ROOT); }
}
