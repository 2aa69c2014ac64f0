package dev.berth.engine.workspace;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.Lifecycle;
import dev.berth.engine.api.LifecyclePolicy;
import dev.berth.engine.TestClock;
import dev.berth.engine.api.WorkspaceState;
import dev.berth.engine.spi.Resources;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A workspace's background processes seen through {@link TrackedProcess}: room for more, what the record keeps, and
 * output as activity. No sandbox and no run code: the seam lets the workspace be tested with stand-in processes.
 */
class TrackedProcessesTest {
    /** A process whose state the test sets. */
    private static final class StandIn implements TrackedProcess {
        private final String id;
        volatile boolean running = true;
        volatile boolean finished;
        volatile Instant lastOutput;
        volatile Store.ProcessRecord record;
        volatile int ended;

        StandIn(String id, Instant lastOutput) {
            this.id = id;
            this.lastOutput = lastOutput;
        }

        @Override public String id() { return id; }
        @Override public boolean running() { return running; }
        @Override public boolean finished() { return finished; }
        @Override public Instant lastOutputAt() { return lastOutput; }
        @Override public Store.ProcessRecord record() { return record; }
        @Override public void ended() { ended++; }

        StandIn over() {
            running = false;
            finished = true;
            return this;
        }
    }

    private final TestClock clock = new TestClock();

    private Workspace workspace() {
        return new Workspace("ws-1", "t", "proj", Lifecycle.PERSISTENT, null, clock.instant(), null, Resources.DEFAULT,
                null, null, WorkspaceState.CREATING, null, null, null, LifecyclePolicy.DEFAULT, clock);
    }

    @Test
    void checkRoom_limitOfRunningProcesses_refusesNamingWorkspaceAndLimit() throws Exception {
        Workspace ws = workspace();
        for (int i = 0; i < 4; i++) ws.track(new StandIn("p-" + i, clock.instant()));
        EngineException e = assertThrows(EngineException.class, () -> ws.checkRoomForProcess(4));
        assertEquals(EngineException.Kind.LIMIT, e.kind());
        assertEquals("workspace 'proj' has 4 background processes (limit 4); stop some with run {process, signal}", e.getMessage());
    }

    @Test
    void checkRoom_limitOfFinishedProcesses_forgetsDownToHalfAndAdmits() throws Exception {
        Workspace ws = workspace();
        for (int i = 0; i < 4; i++) ws.track(new StandIn("p-" + i, clock.instant()).over());
        ws.checkRoomForProcess(4);
        assertEquals(2, ws.processList().size(), "ended processes are forgotten while more than half the limit are tracked");
    }

    @Test
    void lastActivity_runningProcessWroteAfterLastCall_isItsOutput() {
        Workspace ws = workspace();
        StandIn p = new StandIn("p-1", clock.instant());
        ws.track(p);
        clock.advance(Duration.ofMinutes(5));
        p.lastOutput = clock.instant();
        assertEquals(p.lastOutput, ws.lastActivity());
        p.running = false;
        assertEquals(ws.lastUsedAt(), ws.lastActivity(), "an ended process's output is no activity");
    }

    @Test
    void processRecords_someCannotBeReattached_keepsOnlyTheOthers() {
        Workspace ws = workspace();
        assertNull(ws.processRecords(), "no processes: no list in the record");
        StandIn kept = new StandIn("p-1", clock.instant());
        kept.record = new Store.ProcessRecord("p-1", "sleep 9", "s-1", 42, clock.instant().toString(), null);
        ws.track(kept);
        ws.track(new StandIn("p-2", clock.instant()));
        assertEquals(List.of(kept.record), ws.processRecords());
    }

    @Test
    void forgetProcesses_tracked_endsEachOnceAndForgetsThem() {
        Workspace ws = workspace();
        StandIn p = new StandIn("p-1", clock.instant());
        ws.track(p);
        assertSame(p, ws.process("p-1"));
        ws.forgetProcesses();
        assertEquals(1, p.ended);
        assertNull(ws.process("p-1"));
        assertTrue(ws.processList().isEmpty());
    }
}
