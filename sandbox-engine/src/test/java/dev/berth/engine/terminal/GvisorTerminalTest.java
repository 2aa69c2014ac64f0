package dev.berth.engine.terminal;

import dev.berth.engine.gvisor.GvisorDriver;
import dev.berth.engine.spi.IsolationDriver;
import java.nio.file.Path;

/** Terminal processes on the gVisor level (runsc). */
class GvisorTerminalTest extends AbstractTerminalTest {
    @Override
    protected IsolationDriver driver(Path home) { return new GvisorDriver(home); }
}
