package dev.berth.proxy;

import dev.berth.proxy.policy.ApprovalSettings;
import dev.berth.proxy.policy.Policy;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.Socket;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Human-approved grants at the proxy: an approvable host is refused (saying it is approvable) until a grant for the
 * connection's workspace exists, allowed while it lives, and refused again after; a tunnel opened under a grant is
 * closed when the grant expires or its workspace is forgotten; hard rules still apply to a granted host.
 */
class ApprovalsTest {
    static String connect(int port) {
        return "CONNECT approve.test:" + port + " HTTP/1.1\r\nHost: approve.test:" + port + "\r\n\r\n";
    }

    @Test
    void grant_allowsOnlyItsWorkspace_untilItExpires_andClosesItsTunnel() throws Exception {
        {
            try (Harness g = new Harness((h, b) -> b.approval(new ApprovalSettings(Policy.of(List.of("approve.test:" + h.plainEcho.port(),
                    "private-approve.test:" + h.plainEcho.port())), List.of(Duration.ofSeconds(5), Duration.ofHours(1)), Duration.ofSeconds(5))),
                    System::nanoTime)) {
                int p = g.plainEcho.port();
                g.resolver.map("approve.test", "127.0.0.1").map("private-approve.test", "10.0.0.5");
                Approvals a = g.proxy.approvals();

                Harness.Response before = g.send(connect(p));
                assertEquals(403, before.status());
                assertTrue(before.body().contains("is approvable: a human can grant it to this workspace"), before.body());

                Approvals.Check c = a.check("APPROVE.test.", p);
                assertTrue(c.approvable(), c.reason());
                assertEquals("approve.test", c.host());
                assertThrows(IllegalArgumentException.class, () -> a.grant("ws-test", null, c, Duration.ofMinutes(5), "test"));
                a.grant("ws-other", null, c, Duration.ofHours(1), "another workspace's grant");
                assertEquals(403, g.send(connect(p)).status(), "a grant of another workspace must not apply");

                Approvals.Grant grant = a.grant("ws-test", "run-1", c, Duration.ofSeconds(5), "test accepted");
                try (Socket s = g.connect()) {
                    Harness.write(s, connect(p));
                    Harness.Response ok = Harness.Response.read(s.getInputStream());
                    assertEquals(200, ok.status(), ok.body());
                    Harness.write(s, "ping");
                    byte[] four = s.getInputStream().readNBytes(4);
                    assertEquals("ping", new String(four));
                    s.setSoTimeout(15_000);
                    assertTrue(Harness.closedByPeer(s), "the tunnel must be closed when its grant expires");
                }
                g.awaitAudit(r -> r.event().equals("approval-expired") && r.reason().contains(grant.id()));
                assertTrue(g.decisions.stream().anyMatch(d -> d.allowed() && d.reason().contains("allowed by approval grant " + grant.id())));
                assertEquals(403, g.send(connect(p)).status(), "after expiry the host is refused again");
                assertEquals(null, a.active("ws-test", "approve.test", p));

                // hard rules apply to a granted host
                Approvals.Check priv = a.check("private-approve.test", p);
                a.grant("ws-test", null, priv, Duration.ofHours(1), "test");
                Harness.Response refused = g.send("CONNECT private-approve.test:" + p + " HTTP/1.1\r\nHost: private-approve.test:" + p + "\r\n\r\n");
                assertEquals(403, refused.status());
                assertTrue(refused.body().contains("10.0.0.5"), refused.body());

                // forgetting the workspace ends its grants and closes what they opened
                a.grant("ws-test", null, c, Duration.ofHours(1), "again");
                try (Socket s = g.connect()) {
                    Harness.write(s, connect(p));
                    assertEquals(200, Harness.Response.read(s.getInputStream()).status());
                    g.proxy.forgetWorkspace("ws-test");
                    s.setSoTimeout(5_000);
                    assertTrue(Harness.closedByPeer(s));
                }
                g.awaitAudit(r -> r.event().equals("approval-ended") && r.reason().contains("workspace ws-test closed"));
                assertTrue(a.active("ws-test").isEmpty());
                assertEquals(1, a.active("ws-other").size());
                assertTrue(g.audit.stream().anyMatch(r -> r.event().equals("approval-granted") && "ws-test".equals(r.workspace())));
            }
        }
    }

    @Test
    void check_refusesHostsOffTheListAndHardRuleLiterals() throws Exception {
        try (Harness g = new Harness(b -> b.approval(new ApprovalSettings(Policy.of(List.of("*.example.org:443")),
                List.of(Duration.ofHours(1)), Duration.ofSeconds(5))))) {
            Approvals a = g.proxy.approvals();
            assertTrue(a.check("registry.example.org", 443).approvable());
            assertFalse(a.check("example.org", 443).approvable());
            assertTrue(a.check("registry.example.org", 80).reason().contains("is not approvable"));
            assertTrue(a.check("169.254.169.254", 443).reason().contains("can never be approved"));
            assertTrue(a.check("0x7f.1", 443).approvable() == false);
            assertTrue(a.check("bad host", 443).reason().startsWith("invalid host"));
        }
        try (Harness off = new Harness(b -> b)) {
            assertTrue(off.proxy.approvals().check("registry.example.org", 443).reason().startsWith("approval is off"));
        }
    }
}
