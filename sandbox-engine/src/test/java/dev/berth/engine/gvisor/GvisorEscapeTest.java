package dev.berth.engine.gvisor;

import dev.berth.engine.AbstractEscapeTest;
import dev.berth.engine.spi.IsolationDriver;
import java.nio.file.Path;

/**
 * The shared escape and exhaustion cases under gVisor (real runsc from Debian, ptrace platform). In the default run
 * since the host task cap was fixed (gvisor/DESIGN.md): the sandbox of the suite's shared workspace used to die now
 * and then mid-case when the Sentry could not create a ptrace stub under a host pids.max sized for the guest's
 * processes. Cases that take their own sandbox down (fork bomb, balloon) run in a workspace of their own.
 */
class GvisorEscapeTest extends AbstractEscapeTest {
    /** The Sentry lets root make a device node; the node reaches the Sentry's own device emulation (see the base). */
    @Override
    protected boolean mknodRefused() { return false; }


    @Override
    protected IsolationDriver driver(Path home) {
        return new GvisorDriver(home);
    }
}
