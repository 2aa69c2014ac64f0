package dev.berth.engine.api;

/**
 * Result of open_workspace.
 *
 * @param created true for a new workspace, false when an existing persistent workspace was reopened
 * @param resumed true when the reopened workspace had been parked and was resumed
 * @param note    a sentence for the agent about what happened
 * @param pool    for a fresh workspace on an engine with a warm pool: "hit" (a waiting sandbox was claimed) or "miss"
 *                (one was started); null otherwise
 */
public record OpenResult(WorkspaceInfo workspace, boolean created, boolean resumed, String note, String pool) {
    public OpenResult(WorkspaceInfo workspace, boolean created, boolean resumed, String note) {
        this(workspace, created, resumed, note, null);
    }
}
