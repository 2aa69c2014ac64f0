package dev.berth.engine.workspace;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.Lifecycle;
import dev.berth.engine.api.WorkspaceState;
import dev.berth.engine.workspace.Transitions.Effect;
import dev.berth.engine.workspace.Transitions.Step;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** The state machine as a table: every legal move is listed here, and every pair not listed must be refused. */
class TransitionsTest {

    private static final WorkspaceState CREATING = WorkspaceState.CREATING, RUNNING = WorkspaceState.RUNNING,
            PARKING = WorkspaceState.PARKING, PARKED = WorkspaceState.PARKED, RESUMING = WorkspaceState.RESUMING,
            DAMAGED = WorkspaceState.DAMAGED, CLOSED = WorkspaceState.CLOSED;

    /** The whole expected table: (from, step) -> to. */
    static final Map<String, WorkspaceState> LEGAL = Map.ofEntries(
            Map.entry("CREATING STARTED", RUNNING),
            Map.entry("CREATING START_FAILED", CLOSED),
            Map.entry("RUNNING PARK", PARKING),
            Map.entry("RUNNING RESUME", RESUMING),
            Map.entry("RUNNING CLOSE", CLOSED),
            Map.entry("PARKING PARKED", PARKED),
            Map.entry("PARKING PARK_FAILED", RUNNING),
            Map.entry("PARKING PARK_LOST", PARKED),
            Map.entry("PARKED RESUME", RESUMING),
            Map.entry("PARKED CLOSE", CLOSED),
            Map.entry("RESUMING RESUMED", RUNNING),
            Map.entry("RESUMING RESUME_FAILED", PARKED),
            Map.entry("RESUMING DAMAGED", DAMAGED),
            Map.entry("DAMAGED CLOSE", CLOSED));

    static Stream<Arguments> everyPair() {
        List<Arguments> out = new ArrayList<>();
        for (WorkspaceState s : WorkspaceState.values()) for (Step st : Step.values()) out.add(Arguments.of(s, st));
        return out.stream();
    }

    @ParameterizedTest(name = "{0} --{1}-->")
    @MethodSource("everyPair")
    void next_everyPair_movesAsTheTableSaysOrIsRefused(WorkspaceState from, Step step) {
        WorkspaceState expected = LEGAL.get(from + " " + step);
        if (expected != null) {
            assertEquals(expected, Transitions.next(from, step, "w"));
        } else {
            var e = assertThrows(IllegalStateException.class, () -> Transitions.next(from, step, "w"));
            assertEquals("workspace 'w': no move '" + step.wireName() + "' from state " + from.wireName(), e.getMessage());
        }
    }

    @Test
    void closed_isFinal() {
        for (Step st : Step.values()) assertEquals(false, Transitions.allows(CLOSED, st), st.name());
    }

    @Test
    void workspace_move_isTheOnlyWriterAndFollowsTheTable() {
        Workspace ws = new Workspace("ws-1", "t", "proj", Lifecycle.PERSISTENT, null, java.time.Instant.now(), null,
                dev.berth.engine.spi.Resources.DEFAULT, null, null, CREATING, null, null, null, null, null);
        assertEquals(RUNNING, ws.move(Step.STARTED));
        assertEquals(PARKING, ws.move(Step.PARK));
        assertThrows(IllegalStateException.class, () -> ws.move(Step.RESUMED));
        assertEquals(PARKING, ws.state(), "a refused move changes nothing");
        assertEquals(PARKED, ws.move(Step.PARKED));
    }

    static Stream<Arguments> admissions() {
        return Stream.of(
                Arguments.of(WorkspaceAction.RUN, RUNNING, Effect.PROCEED),
                Arguments.of(WorkspaceAction.FILES, RUNNING, Effect.PROCEED),
                Arguments.of(WorkspaceAction.READ_FILES, RUNNING, Effect.PROCEED),
                Arguments.of(WorkspaceAction.PARK, RUNNING, Effect.PROCEED),
                Arguments.of(WorkspaceAction.SNAPSHOT, RUNNING, Effect.PROCEED),
                Arguments.of(WorkspaceAction.CLOSE, RUNNING, Effect.PROCEED),
                Arguments.of(WorkspaceAction.RUN, PARKED, Effect.RESUME_FIRST),
                Arguments.of(WorkspaceAction.FILES, PARKED, Effect.RESUME_FIRST),
                Arguments.of(WorkspaceAction.READ_FILES, PARKED, Effect.RESUME_FIRST),
                Arguments.of(WorkspaceAction.READ_FILES, DAMAGED, Effect.INSPECT),
                Arguments.of(WorkspaceAction.PARK, PARKED, Effect.ALREADY_DONE),
                Arguments.of(WorkspaceAction.SNAPSHOT, PARKED, Effect.FROM_SAVED_STATE),
                Arguments.of(WorkspaceAction.CLOSE, PARKED, Effect.PROCEED),
                Arguments.of(WorkspaceAction.PARK, DAMAGED, Effect.ALREADY_DONE),
                Arguments.of(WorkspaceAction.CLOSE, DAMAGED, Effect.PROCEED));
    }

    @ParameterizedTest(name = "{0} in {1} -> {2}")
    @MethodSource("admissions")
    void admit_allowedPairs_haveTheirEffect(WorkspaceAction a, WorkspaceState s, Effect effect) throws Exception {
        assertEquals(effect, Transitions.admit(a, s, "w"));
    }

    static Stream<Arguments> refusals() {
        String closed = "it is closed; open a new workspace (or open_workspace with from_snapshot)";
        List<Arguments> out = new ArrayList<>();
        for (WorkspaceAction a : List.of(WorkspaceAction.RUN, WorkspaceAction.FILES, WorkspaceAction.READ_FILES, WorkspaceAction.PARK,
                WorkspaceAction.SNAPSHOT, WorkspaceAction.CLOSE)) {
            out.add(Arguments.of(a, CLOSED, closed));
            for (WorkspaceState s : EnumSet.of(CREATING, PARKING, RESUMING)) {
                out.add(Arguments.of(a, s, "it is " + s.wireName() + "; retry in a moment"));
            }
        }
        for (WorkspaceAction a : List.of(WorkspaceAction.RUN, WorkspaceAction.FILES, WorkspaceAction.SNAPSHOT)) {
            out.add(Arguments.of(a, DAMAGED, Transitions.DAMAGED_ADVICE));
        }
        return out.stream();
    }

    @ParameterizedTest(name = "{0} in {1} refused")
    @MethodSource("refusals")
    void admit_refusedPairs_nameActionWorkspaceAndState(WorkspaceAction a, WorkspaceState s, String why) {
        var e = assertThrows(EngineException.class, () -> Transitions.admit(a, s, "proj"));
        assertEquals("cannot " + a.verb() + " workspace 'proj': " + why, e.getMessage());
        assertEquals(EngineException.Kind.ILLEGAL_STATE, e.kind());
    }

    @Test
    void admit_tableIsComplete_everyPairAllowedOrRefused() {
        int decided = (int) admissions().count() + (int) refusals().count();
        assertEquals(6 * WorkspaceState.values().length, decided, "every (action, state) pair is listed once");
    }
}
