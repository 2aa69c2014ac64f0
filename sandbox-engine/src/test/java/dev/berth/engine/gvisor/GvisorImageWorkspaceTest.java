package dev.berth.engine.gvisor;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.berth.engine.AbstractImageWorkspaceTest;
import dev.berth.engine.api.OpenRequest;
import dev.berth.engine.api.Tenant;
import dev.berth.engine.spi.IsolationDriver;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** The image cases on gVisor: runsc's root is the workspace's own overlay of the image's root tree; its layer on top. */
class GvisorImageWorkspaceTest extends AbstractImageWorkspaceTest {
    @Override
    protected IsolationDriver driver(Path home) { return new GvisorDriver(home); }

    @Test
    void imageRoot_isTheWorkspacesOwnWritableCopy() throws Exception {
        org.junit.jupiter.api.Assumptions.assumeTrue(dev.berth.engine.host.HostIdentity.isRoot(), "the overlay is mounted by a root server");
        String ws = engine.open(Tenant.LOCAL, new OpenRequest(null, null, null, null, SMALL, null, null, "tiny")).workspace().id();
        assertEquals(0, run(ws, "echo x > /bin/planted").exitCode(), "the image's root is the workspace's own (RootOverlay)");
        // /etc is the workspace's own copy (WritableRoot), writable as on a normal machine
        assertEquals(0, run(ws, "echo x > /etc/os-release && echo x > /usr/local/x && echo x > /root/x && cat /var/lib/tiny/state").exitCode());
        engine.closeWorkspace(Tenant.LOCAL, ws, true);
    }
}
