package dev.berth.engine.gvisor;

import dev.berth.engine.AbstractTransferTest;
import dev.berth.engine.spi.IsolationDriver;
import java.nio.file.Path;

/** Directory in, work out, on gVisor (the host's /usr: git and tar are there). */
class GvisorTransferTest extends AbstractTransferTest {
    @Override
    protected IsolationDriver driver(Path home) { return new GvisorDriver(home); }
}
