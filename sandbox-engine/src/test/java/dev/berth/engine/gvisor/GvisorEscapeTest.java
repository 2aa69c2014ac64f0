package dev.berth.engine.gvisor;

import dev.berth.engine.AbstractEscapeTest;
import dev.berth.engine.spi.IsolationDriver;
import java.nio.file.Path;

/** The shared escape and exhaustion cases under gVisor (real runsc from Debian, ptrace platform). */
class GvisorEscapeTest extends AbstractEscapeTest {

    @Override
    protected IsolationDriver driver(Path home) {
        return new GvisorDriver(home);
    }
}
