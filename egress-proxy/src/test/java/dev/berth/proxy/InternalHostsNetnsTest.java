package dev.berth.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.berth.proxy.audit.AuditRecord;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Issue 26, item 3, end to end: a named internal host really dialed. The "company mirror" is an HTTP server in a
 * network namespace this test creates, on a private address reachable only over a veth pair to it (loopback can never be
 * an internal range); the resolver stub answers the mirror's name with that address. The proxy dials it only for the
 * named host, and the decision and the audit record say the allowance was used. Needs root and iproute2 (skipped
 * otherwise); everything is removed afterwards.
 */
class InternalHostsNetnsTest {
    static final String NS = "berth-ih-" + ProcessHandle.current().pid();
    static final String HOST_END = "bih" + (ProcessHandle.current().pid() % 100000) + "h";
    static final String NS_END = "bih" + (ProcessHandle.current().pid() % 100000) + "n";
    static final String MIRROR = "10.231.7.2";
    static Process server;
    static boolean created;

    static void sh(String... cmd) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        if (!p.waitFor(30, TimeUnit.SECONDS) || p.exitValue() != 0) throw new IOException(String.join(" ", cmd) + " failed: " + out);
    }

    @BeforeAll
    static void mirror() throws Exception {
        assumeTrue(ProcessHandle.current().info().user().map("root"::equals).orElse(false), "needs root to create a network namespace");
        assumeTrue(Files.isExecutable(Path.of("/usr/sbin/ip")) || Files.isExecutable(Path.of("/sbin/ip")), "needs iproute2");
        assumeTrue(Files.isExecutable(Path.of("/usr/bin/python3")), "needs /usr/bin/python3 for the mirror");
        sh("ip", "netns", "add", NS);
        created = true;
        sh("ip", "link", "add", HOST_END, "type", "veth", "peer", "name", NS_END);
        sh("ip", "link", "set", NS_END, "netns", NS);
        sh("ip", "addr", "add", "10.231.7.1/30", "dev", HOST_END);
        sh("ip", "link", "set", HOST_END, "up");
        sh("ip", "netns", "exec", NS, "ip", "addr", "add", MIRROR + "/30", "dev", NS_END);
        sh("ip", "netns", "exec", NS, "ip", "link", "set", NS_END, "up");
        server = new ProcessBuilder("ip", "netns", "exec", NS, "/usr/bin/python3", "-c", """
                import http.server
                class H(http.server.BaseHTTPRequestHandler):
                    def do_GET(self):
                        b = ("mirror served " + self.path).encode()
                        self.send_response(200); self.send_header("Content-Length", str(len(b))); self.end_headers(); self.wfile.write(b)
                    def log_message(self, *a): pass
                http.server.HTTPServer(("%s", 8080), H).serve_forever()
                """.formatted(MIRROR)).redirectErrorStream(true).start();
        Await.until("the mirror in namespace " + NS + " listens on " + MIRROR + ":8080", () -> {
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress(MIRROR, 8080), 500);
                return true;
            } catch (IOException e) {
                return false;
            }
        });
    }

    @AfterAll
    static void remove() throws Exception {
        if (server != null) {
            server.destroy();
            server.waitFor(10, TimeUnit.SECONDS);
        }
        if (created) {
            sh("ip", "netns", "del", NS); // takes the veth pair with it once one end is inside
            new ProcessBuilder("ip", "link", "del", HOST_END).redirectErrorStream(true).start().waitFor(10, TimeUnit.SECONDS); // if not
        }
    }

    @Test
    void namedMirrorOnAPrivateNetwork_dialed_andTheAllowanceIsAudited_anotherNameForItRefused() throws Exception {
        List<AuditRecord> audit = new CopyOnWriteArrayList<>();
        List<Decision> decisions = new CopyOnWriteArrayList<>();
        ProxyConfig cfg = ConfigLoader.parse("""
                {"allow": [{"host": "mirror.corp.test", "ports": [8080]}, {"host": "other.corp.test", "ports": [8080]}],
                 "internal_hosts": [{"host": "mirror.corp.test", "ranges": ["10.231.7.0/30"]}]}""");
        TestResolver resolver = new TestResolver().map("mirror.corp.test", MIRROR).map("other.corp.test", MIRROR);
        EgressProxy proxy = EgressProxy.builder(cfg).resolver(resolver).auditSink(audit::add).threads(1).start();
        try (EgressProxy.Listener l = proxy.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0),
                new EgressContext("ws-n", "run-n", cfg.ceiling(), decisions::add, Set.of()))) {
            Harness.Response ok = send(l, "mirror.corp.test");
            assertEquals(200, ok.status(), ok.toString());
            assertEquals("mirror served /pkg", ok.body());
            Decision d = Harness.first(decisions, x -> x.host().equals("mirror.corp.test"));
            assertTrue(d.allowed() && d.reason().endsWith("dialing " + MIRROR + " (internal_hosts allows mirror.corp.test in 10.231.7.0/30)"), d.reason());
            AuditRecord a = Await.result("the decision's audit record", () -> Harness.first(audit,
                    r -> "decision".equals(r.event()) && "mirror.corp.test".equals(r.host())), () -> audit);
            assertTrue(a.reason().contains("internal_hosts allows mirror.corp.test in 10.231.7.0/30"), a.reason());
            assertEquals(MIRROR, a.resolvedAddress());

            Harness.Response refused = send(l, "other.corp.test");
            assertEquals(403, refused.status());
            assertEquals("host 'other.corp.test' resolved to " + MIRROR + ", refused: " + MIRROR + " is private (RFC 1918 10.0.0.0/8)",
                    refused.header("X-Berth-Denial"));
        } finally {
            proxy.close();
        }
    }

    static Harness.Response send(EgressProxy.Listener l, String host) throws IOException {
        try (Socket s = new Socket()) {
            s.connect(l.address(), 2000);
            s.setSoTimeout(5000);
            Harness.write(s, "GET http://" + host + ":8080/pkg HTTP/1.1\r\nHost: " + host + ":8080\r\nConnection: close\r\n\r\n");
            return Harness.Response.read(s.getInputStream());
        }
    }
}
