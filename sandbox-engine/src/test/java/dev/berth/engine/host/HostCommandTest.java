package dev.berth.engine.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The time limit of a host command holds whatever the command does with its output: a hung command is killed with
 * what it started, a command that leaves a child holding its output returns when it exits, and a command that prints
 * more than is kept is not blocked by it.
 */
class HostCommandTest {

    @Test
    void hungCommandHoldingItsOutput_killedAtTheLimit_withWhatItStarted() throws Exception {
        long t0 = System.nanoTime();
        // the shell prints, then waits on a child that holds the same output pipe
        IOException e = assertThrows(IOException.class,
                () -> HostCommand.run(List.of("sh", "-c", "echo started; sleep 300 & wait"), Duration.ofSeconds(1)));
        long ms = (System.nanoTime() - t0) / 1_000_000;
        assertTrue(e.getMessage().contains("did not finish in 1 s; it was killed"), e.getMessage());
        assertTrue(e.getMessage().contains("started"), "the output so far is in the error: " + e.getMessage());
        assertTrue(ms < 60_000, "returned at the limit, not when the command would have ended (" + ms + " ms)");
        dev.berth.engine.Await.until("the command's child killed too", Duration.ofSeconds(10),
                () -> ProcessHandle.allProcesses().noneMatch(p -> p.info().commandLine().orElse("").equals("sleep 300")));
    }

    @Test
    void commandExitsLeavingAChildWithItsOutput_returnsWithoutWaitingForTheChild() throws Exception {
        long t0 = System.nanoTime();
        HostCommand.Result r = HostCommand.run(List.of("sh", "-c", "echo done; sleep 30 &"), Duration.ofSeconds(120));
        long ms = (System.nanoTime() - t0) / 1_000_000;
        assertEquals(0, r.exit());
        assertEquals("done\n", r.output());
        assertTrue(ms < 25_000, "did not wait for the child's 30 s (" + ms + " ms)");
        ProcessHandle.allProcesses().filter(p -> p.info().commandLine().orElse("").equals("sleep 30")).forEach(ProcessHandle::destroy);
    }

    @Test
    void largeOutput_keptUpToTheCap_commandNotBlocked() throws Exception {
        HostCommand.Result r = HostCommand.run(List.of("head", "-c", String.valueOf(12 << 20), "/dev/zero"), Duration.ofSeconds(60));
        assertEquals(0, r.exit());
        assertEquals(HostCommand.KEEP, r.output().length());
    }

    @Test
    void failure_carriesExitCodeAndOutput_stdinIsEmpty() throws Exception {
        IOException e = assertThrows(IOException.class, () -> HostCommand.output(List.of("sh", "-c", "echo nope >&2; exit 3"), Duration.ofSeconds(30)));
        assertTrue(e.getMessage().contains("failed (exit 3): nope"), e.getMessage());
        // a command that reads its input sees its end at once instead of waiting on the server's own input
        assertEquals("", HostCommand.output(List.of("cat"), Duration.ofSeconds(30)));
        assertFalse(HostCommand.output("true").contains("x"));
    }
}
