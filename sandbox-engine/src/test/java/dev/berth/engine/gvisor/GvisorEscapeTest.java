package dev.berth.engine.gvisor;

import dev.berth.engine.AbstractEscapeTest;
import dev.berth.engine.spi.IsolationDriver;
import java.nio.file.Path;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * The shared escape and exhaustion cases under gVisor (real runsc from Debian, ptrace platform).
 *
 * <p>Not in the default run: with the packaged runsc (20221219) the sandbox of the suite's shared workspace dies
 * now and then in the middle of a case ("agent closed the stream"), at a different case each time, more often on a
 * loaded machine; the cases themselves passed when the sandbox stayed up. Until that is understood (issue 15 stays
 * open for it) the suite runs with {@code -Dberth.test.gvisorEscape=true}, so that CI is not decided by it.
 */
@EnabledIfSystemProperty(named = "berth.test.gvisorEscape", matches = "true",
        disabledReason = "the packaged runsc's sandbox dies intermittently under this suite; run with -Dberth.test.gvisorEscape=true")
class GvisorEscapeTest extends AbstractEscapeTest {

    @Override
    protected IsolationDriver driver(Path home) {
        return new GvisorDriver(home);
    }
}
