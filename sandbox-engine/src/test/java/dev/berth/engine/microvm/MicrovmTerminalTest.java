package dev.berth.engine.microvm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.berth.engine.api.ParkResult;
import dev.berth.engine.api.ProcessStatus;
import dev.berth.engine.api.Tenant;
import dev.berth.engine.spi.IsolationDriver;
import dev.berth.engine.terminal.AbstractTerminalTest;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * Terminal processes in a microVM (one booted VM for the class), and the level's own promise: a terminal process is
 * frozen with the workspace's memory at park and goes on after resume on the same terminal, with its screen.
 */
class MicrovmTerminalTest extends AbstractTerminalTest {
    @Override
    protected IsolationDriver driver(Path home) {
        return new MicrovmDriver(TestImages.builder(), MicrovmDriver.ImageKind.TEST);
    }

    @Test
    void terminalProcess_survivesParkAndResume_withItsScreenAndInput() throws Exception {
        ProcessStatus started = startTty("while read l; do echo \"echo:$l\"; done", 80, 24);
        String p = started.process();
        type(p, "before\r");
        screenUntil(p, "the line before park", s -> s.contains("echo:before"));
        ParkResult park = engine.park(Tenant.LOCAL, ws);
        assertTrue(park.memoryKept(), park.toString());
        ProcessStatus parked = engine.process(Tenant.LOCAL, ws, p, null, null, 0, null, 65536);
        assertTrue(parked.running() && parked.screen().contains("echo:before"), "frozen, its screen kept: " + parked);
        type(p, "after\r"); // resumes the workspace, re-attaches the process and types into its terminal
        ProcessStatus s = screenUntil(p, "the line after resume", t -> t.contains("echo:after"));
        assertTrue(s.screen().contains("echo:before"), "the screen from before park: " + s.screen());
        assertEquals(started.pid(), s.pid(), "the same process");
        engine.terminal(Tenant.LOCAL, ws, p, new byte[0], true, null); // ^D: read gets EOF, the loop ends
        assertEquals(0, endOf(p).exitCode());
    }
}
