package dev.berth.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.berth.proxy.audit.AuditRecord;
import dev.berth.proxy.policy.Policy;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** Rebinding, keep-alive re-decisions, timeouts and quotas; each test with its own proxy/limits. */
class SessionBehaviourTest {

    @Test
    void rebinding_secondAnswerPointsElsewhere_dialsOnlyTheVettedAddress() throws Exception {
        try (Harness h = new Harness()) {
            // First answer: the echo server's address. Any later answer: 127.0.0.2, where nothing listens.
            h.resolver.map("rebind.test", "127.0.0.1").map("rebind.test", "127.0.0.2");
            try (Socket s = h.connect()) {
                Harness.write(s, "CONNECT rebind.test:" + h.plainEcho.port() + " HTTP/1.1\r\n\r\n");
                assertEquals(200, Harness.Response.read(s.getInputStream()).status());
                Harness.write(s, "x");
                assertEquals('x', s.getInputStream().read());
            }
            Decision d = h.awaitDecision(0);
            assertEquals("127.0.0.1", d.resolvedAddress());
            assertEquals(1, h.resolver.calls("rebind.test"), "resolved exactly once per decision; never re-resolved to dial");
            assertEquals(new InetSocketAddress("127.0.0.1", h.plainEcho.port()), h.plainEcho.accepted.getLast());
        }
    }

    @Test
    void rebinding_answerFlipsToMetadataOnNextDecision_nextRequestDenied() throws Exception {
        try (Harness h = new Harness()) {
            h.resolver.map("rebind.test", "127.0.0.1").map("rebind.test", "169.254.169.254");
            String req = "GET http://rebind.test:" + h.http.port() + "/ HTTP/1.1\r\nHost: rebind.test:" + h.http.port() + "\r\n\r\n";
            try (Socket s = h.connect()) {
                Harness.write(s, req);
                assertEquals(200, Harness.Response.read(s.getInputStream()).status());
                Harness.write(s, req);
                Harness.Response second = Harness.Response.read(s.getInputStream());
                assertEquals(403, second.status());
            }
            assertTrue(h.awaitDecision(0).allowed());
            Decision d = h.awaitDecision(1);
            assertFalse(d.allowed());
            assertTrue(d.reason().contains("resolved to 169.254.169.254, refused"), d.reason());
            assertEquals(1, h.http.seenPaths.size());
        }
    }

    @Test
    void keepAlive_secondRequestToDeniedHost_deniedAndConnectionStillUsable() throws Exception {
        try (Harness h = new Harness()) {
            String ok = "GET http://allowed.test:" + h.http.port() + "/1 HTTP/1.1\r\nHost: allowed.test:" + h.http.port() + "\r\n\r\n";
            String evil = "GET http://evil.test/steal HTTP/1.1\r\nHost: evil.test\r\n\r\n";
            try (Socket s = h.connect()) {
                Harness.write(s, ok + evil + ok.replace("/1 ", "/3 "));
                assertEquals(200, Harness.Response.read(s.getInputStream()).status());
                Harness.Response denied = Harness.Response.read(s.getInputStream());
                assertEquals(403, denied.status());
                assertEquals("host 'evil.test' matches no allowlist entry", denied.header("X-Berth-Denial"));
                assertEquals("hello GET /3 body=0", Harness.Response.read(s.getInputStream()).body());
            }
            assertEquals(List.of(true, false, true), List.of(h.awaitDecision(0).allowed(), h.awaitDecision(1).allowed(), h.awaitDecision(2).allowed()));
            assertEquals(List.of("/1", "/3"), h.http.seenPaths);
        }
    }

    @Test
    void slowloris_headNeverCompleted_408AfterHeaderTimeout() throws Exception {
        try (Harness h = new Harness(b -> b.headerTimeout(Duration.ofMillis(300)))) {
            try (Socket s = h.connect()) {
                Harness.write(s, "GET http://allowed.test/ HTTP/1.1\r\nHost: allo");
                long t0 = System.nanoTime();
                Harness.Response r = Harness.Response.read(s.getInputStream());
                assertEquals(408, r.status());
                assertTrue(System.nanoTime() - t0 < 3_000_000_000L);
            }
            Decision d = h.awaitDecision(0);
            assertEquals("request head not completed within 300 ms", d.reason());
        }
    }

    @Test
    void keepAlive_idleLongerThanHeaderTimeout_nextRequestStillServed() throws Exception {
        try (Harness h = new Harness(b -> b.headerTimeout(Duration.ofMillis(300)))) {
            String req = "GET http://allowed.test:" + h.http.port() + "/k HTTP/1.1\r\nHost: allowed.test:" + h.http.port() + "\r\n\r\n";
            try (Socket s = h.connect()) {
                Harness.write(s, req);
                assertEquals(200, Harness.Response.read(s.getInputStream()).status());
                Thread.sleep(700); // deliberately idle past the header timeout: the passing time is what is tested
                Harness.write(s, req);
                assertEquals(200, Harness.Response.read(s.getInputStream()).status(), "idle keep-alive is governed by idleTimeout only");
            }
        }
    }

    @Test
    void slowTls_clientHelloNeverSent_tunnelClosedAfterHeaderTimeout() throws Exception {
        try (Harness h = new Harness(b -> b.headerTimeout(Duration.ofMillis(300)))) {
            try (Socket s = h.connect()) {
                Harness.write(s, "CONNECT allowed.test:" + h.tlsEcho.port() + " HTTP/1.1\r\n\r\n");
                assertEquals(200, Harness.Response.read(s.getInputStream()).status());
                s.getOutputStream().write(ClientHellos.withSni("allowed.test"), 0, 20); // partial record
                assertTrue(Harness.closedByPeer(s));
            }
            Decision d = h.awaitDecision(0);
            assertFalse(d.allowed());
            assertTrue(d.reason().contains("no complete TLS ClientHello within 300 ms"), d.reason());
        }
    }

    @Test
    void idleTunnel_noTraffic_closedWithIdleReason() throws Exception {
        try (Harness h = new Harness(b -> b.idleTimeout(Duration.ofMillis(300)))) {
            try (Socket s = h.connect()) {
                Harness.write(s, "CONNECT allowed.test:" + h.plainEcho.port() + " HTTP/1.1\r\n\r\n");
                assertEquals(200, Harness.Response.read(s.getInputStream()).status());
                assertTrue(Harness.closedByPeer(s));
            }
            AuditRecord a = h.awaitAudit(r -> "connect".equals(r.kind()));
            assertTrue(a.closeReason().startsWith("idle timeout"), a.closeReason());
        }
    }

    @Test
    void tunnelQuota_thirdConcurrentTunnel_refused429() throws Exception {
        try (Harness h = new Harness(b -> b.maxTunnelsPerWorkspace(2))) {
            List<Socket> open = new ArrayList<>();
            try {
                for (int i = 0; i < 2; i++) {
                    Socket s = h.connect();
                    open.add(s);
                    Harness.write(s, "CONNECT allowed.test:" + h.plainEcho.port() + " HTTP/1.1\r\n\r\n");
                    assertEquals(200, Harness.Response.read(s.getInputStream()).status());
                }
                Harness.Response third = h.send("CONNECT allowed.test:" + h.plainEcho.port() + " HTTP/1.1\r\n\r\n");
                assertEquals(429, third.status());
                assertTrue(third.body().contains("already has 2 open upstream connections"), third.body());
            } finally {
                for (Socket s : open) s.close();
            }
            // Slots are released when tunnels close.
            Await.until("a tunnel slot is released", () -> {
                try {
                    return h.send("CONNECT allowed.test:" + h.plainEcho.port() + " HTTP/1.1\r\n\r\n").status() == 200;
                } catch (java.io.IOException e) {
                    throw new java.io.UncheckedIOException(e);
                }
            });
        }
    }

    @Test
    void byteQuota_tunnelExceedsWorkspaceBytes_resetWithQuotaReason() throws Exception {
        try (Harness h = new Harness(b -> b.maxBytesPerWorkspace(10_000))) {
            try (Socket s = h.connect()) {
                Harness.write(s, "CONNECT allowed.test:" + h.plainEcho.port() + " HTTP/1.1\r\n\r\n");
                assertEquals(200, Harness.Response.read(s.getInputStream()).status());
                try {
                    for (int i = 0; i < 10; i++) s.getOutputStream().write(new byte[4000]);
                } catch (java.io.IOException expected) {
                    // reset by the proxy while writing
                }
                assertTrue(Harness.closedByPeer(s));
            }
            AuditRecord a = h.awaitAudit(r -> "connect".equals(r.kind()));
            assertTrue(a.closeReason().contains("exceeded its byte quota of 10000 bytes"), a.closeReason());
        }
    }

    @Test
    void loopbackUpstream_withoutUnsafeSetting_refused() throws Exception {
        try (Harness h = new Harness(b -> b.unsafeAllowLoopbackUpstreams(false))) {
            Harness.Response r = h.send("CONNECT allowed.test:" + h.plainEcho.port() + " HTTP/1.1\r\n\r\n");
            assertEquals(403, r.status());
            assertTrue(h.awaitDecision(0).reason().contains("resolved to 127.0.0.1, refused: 127.0.0.1 is loopback"));
            assertTrue(h.plainEcho.accepted.isEmpty());
        }
    }

    @Test
    void upstreamDown_connectRefused_502WithReason() throws Exception {
        try (Harness h = new Harness()) {
            int deadPort;
            try (var ss = new java.net.ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
                deadPort = ss.getLocalPort();
            }
            var p = Policy.of(List.of("allowed.test:" + deadPort));
            try (EgressProxy proxy = EgressProxy.builder(h.config.toBuilder().ceiling(p).build()).resolver(h.resolver).threads(1).start();
                 var l = proxy.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), new EgressContext("w", null, p, null));
                 Socket s = new Socket()) {
                s.connect(l.address());
                s.setSoTimeout(5000);
                Harness.write(s, "CONNECT allowed.test:" + deadPort + " HTTP/1.1\r\n\r\n");
                Harness.Response r = Harness.Response.read(s.getInputStream());
                assertEquals(502, r.status());
                assertTrue(r.body().contains("upstream connect to 127.0.0.1:" + deadPort + " failed"), r.body());
            }
        }
    }

    @Test
    void unknownName_dnsFails_deniedWithResolutionReason() throws Exception {
        try (Harness h = new Harness()) {
            var p = Policy.of(List.of("nxdomain.test:80"));
            try (EgressProxy proxy = EgressProxy.builder(h.config.toBuilder().ceiling(p).build()).resolver(h.resolver).threads(1).start();
                 var l = proxy.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), new EgressContext("w", null, p, h.decisions::add));
                 Socket s = new Socket()) {
                s.connect(l.address());
                s.setSoTimeout(5000);
                Harness.write(s, "GET http://nxdomain.test/ HTTP/1.1\r\nHost: nxdomain.test\r\n\r\n");
                assertEquals(403, Harness.Response.read(s.getInputStream()).status());
            }
            assertTrue(h.awaitDecision(0).reason().startsWith("DNS resolution of 'nxdomain.test' failed"));
        }
    }

    @Test
    void attach_engineAborts_auditRecordsEngineReason() throws Exception {
        try (Harness h = new Harness()) {
            CountDownLatch opened = new CountDownLatch(1);
            CountDownLatch closed = new CountDownLatch(1);
            ProxyConnection c = h.proxy.attach(new EgressContext("ws-abort", "run-9", h.config.ceiling(), null), new ClientSink() {
                @Override public void write(ByteBuffer b) { opened.countDown(); }
                @Override public void shutdownOutput() {}
                @Override public void reset(String reason) {}
                @Override public void closed() { closed.countDown(); }
            });
            c.write(ByteBuffer.wrap(("CONNECT allowed.test:" + h.plainEcho.port() + " HTTP/1.1\r\n\r\n").getBytes(StandardCharsets.US_ASCII)));
            assertTrue(opened.await(30, TimeUnit.SECONDS));
            c.abort("workspace closed");
            assertTrue(closed.await(30, TimeUnit.SECONDS));
            AuditRecord a = h.awaitAudit(r -> "ws-abort".equals(r.workspace()) && "connect".equals(r.kind()));
            assertEquals("aborted by engine: workspace closed", a.closeReason());
            assertEquals("run-9", a.run());
        }
    }

    @Test
    void attach_denialAfterTunnelStart_sinkResetWithReason() throws Exception {
        try (Harness h = new Harness()) {
            AtomicReference<String> reset = new AtomicReference<>();
            CountDownLatch done = new CountDownLatch(1);
            List<Decision> ds = new CopyOnWriteArrayList<>();
            ProxyConnection c = h.proxy.attach(new EgressContext("ws-sni", null, h.config.ceiling(), ds::add), new ClientSink() {
                @Override public void write(ByteBuffer b) {}
                @Override public void shutdownOutput() {}
                @Override public void reset(String reason) { reset.set(reason); }
                @Override public void closed() { done.countDown(); }
            });
            c.write(ByteBuffer.wrap(("CONNECT allowed.test:" + h.tlsEcho.port() + " HTTP/1.1\r\n\r\n").getBytes(StandardCharsets.US_ASCII)));
            c.write(ByteBuffer.wrap(ClientHellos.withSni("evil.test")));
            assertTrue(done.await(30, TimeUnit.SECONDS));
            assertEquals("TLS SNI 'evil.test' does not match CONNECT host 'allowed.test'", reset.get());
            assertEquals(1, ds.size());
            assertFalse(ds.getFirst().allowed());
        }
    }
}
