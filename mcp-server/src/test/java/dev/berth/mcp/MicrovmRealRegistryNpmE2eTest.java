package dev.berth.mcp;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Disabled;
import org.junit.jupiter.api.Timeout;

/**
 * {@code npm ci} from the machine's real npm registry through the proxy, in a QEMU microVM (TCG here) on the
 * host-packages image: the host's node and npm inside the guest.
 */
@Disabled("under TCG the install ran 598 s and failed: ECONNRESET, 'Client network socket disconnected before secure"
        + " TLS connection was established' fetching a packument, with nothing in egress_denied; not yet diagnosed"
        + " (see docs/testing.md, Real registries)")
@Timeout(value = 40, unit = TimeUnit.MINUTES)
class MicrovmRealRegistryNpmE2eTest extends AbstractRealRegistryNpmE2eTest {
    @Override
    ToolsImage level() { return ToolsImage.MICROVM; }
}
