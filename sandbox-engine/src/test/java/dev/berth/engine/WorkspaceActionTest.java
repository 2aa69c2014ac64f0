package dev.berth.engine;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

class WorkspaceActionTest {
    static List<WorkspaceAction> actions() {
        return List.of(WorkspaceAction.RUN, WorkspaceAction.FILES, WorkspaceAction.PARK, WorkspaceAction.SNAPSHOT, WorkspaceAction.CLOSE);
    }

    @ParameterizedTest
    @MethodSource("actions")
    void check_closedWorkspace_refusedByName(WorkspaceAction a) {
        var e = assertThrows(EngineException.class, () -> WorkspaceAction.check(a, WorkspaceState.CLOSED, "proj"));
        assertEquals("cannot " + a.verb() + " workspace 'proj': it is closed; open a new workspace (or open_workspace with from_snapshot)", e.getMessage());
        assertEquals(EngineException.Kind.ILLEGAL_STATE, e.kind());
    }

    @ParameterizedTest
    @EnumSource(value = WorkspaceState.class, names = {"CREATING", "PARKING", "RESUMING"})
    void check_transitionalState_refusedWithRetryAdvice(WorkspaceState s) {
        var e = assertThrows(EngineException.class, () -> WorkspaceAction.check(WorkspaceAction.PARK, s, "w"));
        assertEquals("cannot park workspace 'w': it is " + s.wireName() + "; retry in a moment", e.getMessage());
    }

    @ParameterizedTest
    @MethodSource("actions")
    void check_runningOrParked_allowed(WorkspaceAction a) {
        assertDoesNotThrow(() -> WorkspaceAction.check(a, WorkspaceState.RUNNING, "w"));
        assertDoesNotThrow(() -> WorkspaceAction.check(a, WorkspaceState.PARKED, "w"));
    }
}
