package dev.berth.engine.api;

/**
 * Lifecycle states of a workspace. The legal moves between them are the table in
 * {@link dev.berth.engine.workspace.Transitions}; what each caller action does in each state is
 * {@link dev.berth.engine.workspace.Transitions#admit}; everything else is refused by name.
 *
 * <pre>
 * creating -> running -> parking -> parked -> resuming -> running ... -> closed
 *                                                      -> damaged (saved state failed verification) -> closed
 * </pre>
 */
public enum WorkspaceState {
    CREATING, RUNNING, PARKING, PARKED, RESUMING, DAMAGED, CLOSED;

    /** Lower-case wire name used in tool results. */
    public String wireName() { return name().toLowerCase(java.util.Locale.ROOT); }
}
