package dev.berth.engine.egress;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.berth.proxy.net.HostNames;
import dev.berth.proxy.policy.Policy;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * What the proxy is told about a connection no run could be attributed: every active run's own narrowing together, so
 * a human's approval grant for the workspace reaches it only where every narrowing run allows the target (issue 26).
 */
class WorkspaceEgressNarrowingTest {
    static boolean allows(Policy p, String host) throws HostNames.InvalidHostException {
        return p.check(HostNames.normalize(host), 443).allowed();
    }

    @Test
    void noRunNarrowed_noNarrowing_soAGrantApplies() {
        WorkspaceEgress w = new WorkspaceEgress(null, "ws-1", Policy.of(List.of("a.test", "b.test")), List.of(), "acme");
        w.begin("run-1", null);
        assertNull(w.narrowings());
    }

    @Test
    void runsNarrowed_theirNarrowingsTogether() throws Exception {
        WorkspaceEgress w = new WorkspaceEgress(null, "ws-1", Policy.of(List.of("a.test", "b.test")), List.of(), "acme");
        w.begin("run-1", Policy.of(List.of("a.test", "granted.test")));
        WorkspaceEgress.RunEgress second = w.begin("run-2", Policy.of(List.of("granted.test")));
        assertTrue(allows(w.narrowings(), "granted.test"));
        assertFalse(allows(w.narrowings(), "a.test"), "run-2 did not name a.test");
        w.end(second);
        assertTrue(allows(w.narrowings(), "a.test"));
        assertFalse(allows(w.narrowings(), "other.test"));
    }
}
