package dev.berth.engine;

/**
 * Every action that can be asked of a workspace, as one closed set, so the lifecycle check is exhaustive: a new
 * action that is not placed in {@link #check} does not compile.
 */
public sealed interface WorkspaceAction {

    /** Verb used in refusal messages: "cannot park workspace 'x': it is closed". */
    String verb();

    record Run() implements WorkspaceAction { public String verb() { return "run in"; } }
    record Files() implements WorkspaceAction { public String verb() { return "access files of"; } }
    record Park() implements WorkspaceAction { public String verb() { return "park"; } }
    record Snapshot() implements WorkspaceAction { public String verb() { return "snapshot"; } }
    record Close() implements WorkspaceAction { public String verb() { return "close"; } }

    WorkspaceAction RUN = new Run();
    WorkspaceAction FILES = new Files();
    WorkspaceAction PARK = new Park();
    WorkspaceAction SNAPSHOT = new Snapshot();
    WorkspaceAction CLOSE = new Close();

    /**
     * Refuses {@code action} in {@code state} with a message naming the workspace, the state and what to do next.
     * Transitional states (creating, parking, resuming) are held only under the workspace lock, so callers that take
     * the lock never see them; seeing one here means a previous transition failed half-way.
     */
    static void check(WorkspaceAction action, WorkspaceState state, String workspace) throws EngineException {
        String why = switch (state) {
            case CLOSED -> "it is closed; open a new workspace (or open_workspace with from_snapshot)";
            case CREATING, PARKING, RESUMING -> "it is " + state.wireName() + "; retry in a moment";
            // run and file access on a parked workspace resume it; park of a parked one is a no-op;
            // snapshot of a parked one copies its saved state.
            case RUNNING, PARKED -> null;
        };
        if (why != null) {
            throw new EngineException(EngineException.Kind.ILLEGAL_STATE,
                    "cannot " + action.verb() + " workspace '" + workspace + "': " + why);
        }
    }
}
