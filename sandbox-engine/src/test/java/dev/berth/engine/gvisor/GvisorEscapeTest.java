package dev.berth.engine.gvisor;

import dev.berth.engine.AbstractEscapeTest;
import dev.berth.engine.spi.IsolationDriver;
import java.nio.file.Path;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * The shared escape and exhaustion cases under gVisor (real runsc from Debian, ptrace platform).
 *
 * <p>Not in the default run yet. The sandbox of the suite's shared workspace used to die now and then mid-case
 * ("agent closed the stream"): the Sentry panicked when it could not create a ptrace stub under a host pids.max
 * sized for the guest's processes (cause and fix in gvisor/DESIGN.md). Since the fix the suite passed 3 runs out of
 * 3 here (it had lost its sandbox in 2 of 4 before); it runs with {@code -Dberth.test.gvisorEscape=true} until it
 * has a longer record.
 */
@EnabledIfSystemProperty(named = "berth.test.gvisorEscape", matches = "true",
        disabledReason = "the packaged runsc's sandbox dies intermittently under this suite; run with -Dberth.test.gvisorEscape=true")
class GvisorEscapeTest extends AbstractEscapeTest {

    @Override
    protected IsolationDriver driver(Path home) {
        return new GvisorDriver(home);
    }
}
