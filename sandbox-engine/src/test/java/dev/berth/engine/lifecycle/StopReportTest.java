package dev.berth.engine.lifecycle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The stop's one line on stderr says what was parked, closed and stopped, what was left, and how long it took. */
class StopReportTest {
    @Test
    void line_cleanStop_namesWhatWasDone() {
        StopReport r = new StopReport(List.of("ws-a memory kept", "b files only"), 1, 3, List.of(), 1_840, false);
        assertEquals("parked 2 workspaces (ws-a memory kept, b files only), closed 1 ephemeral, stopped 3 commands; done in 1.8 s", r.line());
        assertTrue(r.complete());
    }

    @Test
    void line_nothingOpen_saysSoInOneLine() {
        assertEquals("parked 0 workspaces, closed 0 ephemeral, stopped 1 command; done in 0.0 s",
                new StopReport(List.of(), 0, 1, List.of(), 3, false).line());
    }

    @Test
    void line_unfinishedWorkspace_isNamedAndIncomplete() {
        StopReport r = new StopReport(List.of("a files only"), 0, 0, List.of("b (busy resuming until the stop's bound was over)"), 60_000, false);
        assertEquals("parked 1 workspace (a files only), closed 0 ephemeral, stopped 0 commands; not finished: b (busy resuming"
                + " until the stop's bound was over); done in 60.0 s", r.line());
        assertFalse(r.complete());
    }

    @Test
    void line_fastPath_saysStateIsLeftAsAfterACrash() {
        StopReport r = new StopReport(List.of(), 2, 0, List.of(), 1_600, true);
        assertEquals("fast stop: killed 2 sandboxes and released their storage; persistent workspaces are left as after a"
                + " crash (the next start recovers them); done in 1.6 s", r.line());
        assertFalse(r.complete());
    }
}
