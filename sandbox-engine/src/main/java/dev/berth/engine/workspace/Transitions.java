package dev.berth.engine.workspace;

import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.EngineException.Kind;
import dev.berth.engine.api.WorkspaceState;
import java.util.EnumMap;
import java.util.Map;

/**
 * The workspace state machine: the one table of legal moves, and what each caller action does in each state.
 * {@link Workspace#move} is the only writer of a workspace's state and asks {@link #next}; engine code never assigns
 * a state itself. Stateless, thread-safe.
 *
 * <pre>
 *   creating --started--> running --park--> parking --parked--> parked --resume--> resuming --resumed--> running
 *      |                    |  ^              |                   |                  |
 *      +--start_failed--+   |  +--park_failed-+ (sandbox alive)   |                  +--resume_failed--> parked
 *                       |   +--resume (its sandbox had died)      |                  +--damaged--> damaged
 *                       v                                         v
 *   closed  <--close-- (creating, running, parked, damaged)    parking --park_lost--> parked (sandbox gone, files kept)
 * </pre>
 */
public final class Transitions {
    private Transitions() {}

    /** An internal step of a transition, taken by the engine while it holds the workspace's lock. */
    public enum Step {
        STARTED, START_FAILED,
        PARK, PARKED, PARK_FAILED, PARK_LOST,
        RESUME, RESUMED, RESUME_FAILED, DAMAGED,
        CLOSE;

        String wireName() { return name().toLowerCase(java.util.Locale.ROOT); }
    }

    /** What an admitted caller action does in the workspace's current state. */
    public enum Effect {
        /** the sandbox is running: go ahead */
        PROCEED,
        /** the workspace is parked: resume it, then go ahead */
        RESUME_FIRST,
        /** nothing to do (park of a parked workspace) */
        ALREADY_DONE,
        /** the workspace is parked: work on its saved state without starting it (snapshot) */
        FROM_SAVED_STATE,
        /**
         * the workspace is damaged: read its files from a throwaway, read-only start of its disk (no memory), leaving
         * its state and saved files as they are
         */
        INSPECT
    }

    private static final Map<WorkspaceState, Map<Step, WorkspaceState>> MOVES = new EnumMap<>(WorkspaceState.class);

    private static void move(WorkspaceState from, Step step, WorkspaceState to) {
        MOVES.computeIfAbsent(from, k -> new EnumMap<>(Step.class)).put(step, to);
    }

    static {
        move(WorkspaceState.CREATING, Step.STARTED, WorkspaceState.RUNNING);
        move(WorkspaceState.CREATING, Step.START_FAILED, WorkspaceState.CLOSED);
        move(WorkspaceState.RUNNING, Step.PARK, WorkspaceState.PARKING);
        move(WorkspaceState.RUNNING, Step.RESUME, WorkspaceState.RESUMING);   // its sandbox had stopped
        move(WorkspaceState.RUNNING, Step.CLOSE, WorkspaceState.CLOSED);
        move(WorkspaceState.PARKING, Step.PARKED, WorkspaceState.PARKED);
        move(WorkspaceState.PARKING, Step.PARK_FAILED, WorkspaceState.RUNNING); // nothing was lost: still running
        move(WorkspaceState.PARKING, Step.PARK_LOST, WorkspaceState.PARKED);   // sandbox stopped, files kept
        move(WorkspaceState.PARKED, Step.RESUME, WorkspaceState.RESUMING);
        move(WorkspaceState.PARKED, Step.CLOSE, WorkspaceState.CLOSED);
        move(WorkspaceState.RESUMING, Step.RESUMED, WorkspaceState.RUNNING);
        move(WorkspaceState.RESUMING, Step.RESUME_FAILED, WorkspaceState.PARKED);
        move(WorkspaceState.RESUMING, Step.DAMAGED, WorkspaceState.DAMAGED);
        move(WorkspaceState.DAMAGED, Step.CLOSE, WorkspaceState.CLOSED);
    }

    /**
     * The state {@code step} leads to from {@code from}.
     *
     * @throws IllegalStateException when the table has no such move: an engine bug, never a caller's mistake
     */
    static WorkspaceState next(WorkspaceState from, Step step, String workspace) {
        WorkspaceState to = MOVES.getOrDefault(from, Map.of()).get(step);
        if (to == null) {
            throw new IllegalStateException("workspace '" + workspace + "': no move '" + step.wireName() + "' from state "
                    + from.wireName());
        }
        return to;
    }

    /** Whether the table has a move {@code step} from {@code from} (for tests and diagnostics). */
    static boolean allows(WorkspaceState from, Step step) {
        return MOVES.getOrDefault(from, Map.of()).containsKey(step);
    }

    /**
     * Admits or refuses a caller's {@code action} in {@code state}. A refusal names the action, the workspace and
     * the state, and says what to do next: "cannot park workspace 'x': it is closed; ...".
     */
    static Effect admit(WorkspaceAction action, WorkspaceState state, String workspace) throws EngineException {
        return switch (state) {
            case RUNNING -> Effect.PROCEED;
            case PARKED -> switch (action) {
                case WorkspaceAction.Run r -> Effect.RESUME_FIRST;
                case WorkspaceAction.Files f -> Effect.RESUME_FIRST;
                case WorkspaceAction.ReadFiles f -> Effect.RESUME_FIRST;
                case WorkspaceAction.Park p -> Effect.ALREADY_DONE;
                case WorkspaceAction.Snapshot s -> Effect.FROM_SAVED_STATE;
                case WorkspaceAction.Close c -> Effect.PROCEED;
            };
            case DAMAGED -> switch (action) {
                case WorkspaceAction.Close c -> Effect.PROCEED;
                case WorkspaceAction.Park p -> Effect.ALREADY_DONE;
                case WorkspaceAction.Run r -> throw refuse(action, workspace, DAMAGED_ADVICE);
                case WorkspaceAction.Files f -> throw refuse(action, workspace, DAMAGED_ADVICE);
                case WorkspaceAction.ReadFiles f -> Effect.INSPECT;
                case WorkspaceAction.Snapshot s -> throw refuse(action, workspace, DAMAGED_ADVICE);
            };
            case CLOSED -> throw refuse(action, workspace, "it is closed; open a new workspace (or open_workspace with from_snapshot)");
            case CREATING, PARKING, RESUMING -> throw refuse(action, workspace, "it is " + state.wireName() + "; retry in a moment");
        };
    }

    static final String DAMAGED_ADVICE = "it is damaged (its saved state failed verification, see list_workspaces);"
            + " nothing was resumed. read_file and list_files still show what is on its disk (read-only, without what"
            + " was only in memory); close it with delete: true when done";

    private static EngineException refuse(WorkspaceAction action, String workspace, String why) {
        return new EngineException(Kind.ILLEGAL_STATE, "cannot " + action.verb() + " workspace '" + workspace + "': " + why);
    }
}
