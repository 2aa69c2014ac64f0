package dev.berth.proxy;

import dev.berth.proxy.audit.AuditRecord;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class WorkingPathsTest extends HarnessTest {
    @Test
    void connect_plainPortAllowedHost_echoesThroughTunnel() throws Exception {
        int before = h.decisions.size();
        try (Socket s = h.connect()) {
            Harness.write(s, "CONNECT allowed.test:" + h.plainEcho.port() + " HTTP/1.1\r\nHost: allowed.test:" + h.plainEcho.port() + "\r\n\r\n");
            Harness.Response r = Harness.Response.read(s.getInputStream());
            assertEquals(200, r.status());
            Harness.write(s, "ping");
            assertEquals("ping", new String(s.getInputStream().readNBytes(4), StandardCharsets.US_ASCII));
            s.shutdownOutput();
            assertEquals(-1, s.getInputStream().read(), "half-close propagated both ways");
        }
        Decision d = h.awaitDecision(before);
        assertTrue(d.allowed(), d.reason());
        assertEquals("127.0.0.1", d.resolvedAddress());
        AuditRecord a = h.awaitAudit(r -> "connect".equals(r.kind()) && r.bytesUp() == 4 && r.bytesDown() == 4);
        assertEquals("complete", a.closeReason());
    }

    @Test
    void connect_tlsPortWithMatchingSni_forwardsClientHelloAndData() throws Exception {
        byte[] hello = ClientHellos.withSni("allowed.test");
        try (Socket s = h.connect()) {
            Harness.write(s, "CONNECT allowed.test:" + h.tlsEcho.port() + " HTTP/1.1\r\n\r\n");
            assertEquals(200, Harness.Response.read(s.getInputStream()).status());
            s.getOutputStream().write(hello);
            assertArrayEquals(hello, s.getInputStream().readNBytes(hello.length));
        }
        Decision d = h.decisions.stream().filter(x -> x.port() == h.tlsEcho.port()).findFirst().orElseThrow();
        assertTrue(d.allowed());
        assertTrue(d.reason().contains("TLS SNI matches"), d.reason());
    }

    @Test
    void httpGet_allowedHostViaListener_forwardsAndStripsHopByHop() throws Exception {
        Harness.Response r = h.send("GET http://allowed.test:" + h.http.port() + "/x?y=1 HTTP/1.1\r\nHost: allowed.test:" + h.http.port()
                + "\r\nProxy-Authorization: Basic c2VjcmV0\r\nConnection: close, X-Drop\r\nX-Drop: 1\r\nX-Keep: 2\r\n\r\n");
        assertEquals(200, r.status(), r.toString());
        assertEquals("hello GET /x?y=1 body=0", r.body());
        var seen = h.http.seenHeaders.getLast();
        assertNull(seen.get("Proxy-authorization"));
        assertNull(seen.get("X-drop"));
        assertEquals(List.of("2"), seen.get("X-keep"));
    }

    @Test
    void httpPost_chunkedBody_forwardedIntact() throws Exception {
        Harness.Response r = h.send("POST http://allowed.test:" + h.http.port() + "/p HTTP/1.1\r\nHost: allowed.test:" + h.http.port()
                + "\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\nhello\r\n3;ext=1\r\nabc\r\n0\r\n\r\n");
        assertEquals(200, r.status(), r.toString());
        assertEquals("hello POST /p body=8", r.body());
    }

    @Test
    void httpGet_keepAliveTwoAllowedRequests_bothDecidedAndServed() throws Exception {
        int before = h.decisions.size();
        try (Socket s = h.connect()) {
            String req = "GET http://allowed.test:" + h.http.port() + "/a HTTP/1.1\r\nHost: allowed.test:" + h.http.port() + "\r\n\r\n";
            Harness.write(s, req + req.replace("/a HTTP", "/b HTTP"));
            assertEquals("hello GET /a body=0", Harness.Response.read(s.getInputStream()).body());
            assertEquals("hello GET /b body=0", Harness.Response.read(s.getInputStream()).body());
        }
        h.awaitDecision(before + 1);
    }

    @Test
    void attach_httpGetAndConnect_workThroughInJvmApi() throws Exception {
        ByteArrayOutputStream got = new ByteArrayOutputStream();
        CountDownLatch closed = new CountDownLatch(1);
        ClientSink sink = new ClientSink() {
            @Override public synchronized void write(ByteBuffer b) { byte[] a = new byte[b.remaining()]; b.get(a); got.writeBytes(a); }
            @Override public void shutdownOutput() {}
            @Override public void reset(String reason) { closed.countDown(); }
            @Override public void closed() { closed.countDown(); }
        };
        List<Decision> ds = new java.util.concurrent.CopyOnWriteArrayList<>();
        EgressContext ctx = new EgressContext("ws-attach", null, h.config.ceiling(), ds::add);
        ProxyConnection c = h.proxy.attach(ctx, sink);
        String req = "GET http://allowed.test:" + h.http.port() + "/att HTTP/1.1\r\nHost: allowed.test:" + h.http.port() + "\r\nConnection: close\r\n\r\n";
        assertTrue(c.write(ByteBuffer.wrap(req.getBytes(StandardCharsets.US_ASCII))));
        assertTrue(closed.await(30, TimeUnit.SECONDS));
        String text;
        synchronized (sink) {
            text = got.toString(StandardCharsets.ISO_8859_1);
        }
        assertTrue(text.startsWith("HTTP/1.1 200"), text);
        assertTrue(text.endsWith("hello GET /att body=0"), text);
        assertTrue(ds.getFirst().allowed());
        assertEquals("ws-attach", ds.getFirst().workspaceId());
    }

    @Test
    void attach_connectTunnel_echoesAndPropagatesEof() throws Exception {
        ByteArrayOutputStream got = new ByteArrayOutputStream();
        CountDownLatch outputShut = new CountDownLatch(1);
        ClientSink sink = new ClientSink() {
            @Override public synchronized void write(ByteBuffer b) { byte[] a = new byte[b.remaining()]; b.get(a); got.writeBytes(a); }
            @Override public void shutdownOutput() { outputShut.countDown(); }
            @Override public void reset(String reason) {}
        };
        ProxyConnection c = h.proxy.attach(new EgressContext("ws-attach2", "r", h.config.ceiling(), null), sink);
        c.write(ByteBuffer.wrap(("CONNECT allowed.test:" + h.plainEcho.port() + " HTTP/1.1\r\n\r\n").getBytes(StandardCharsets.US_ASCII)));
        c.write(ByteBuffer.wrap("over-the-tunnel".getBytes(StandardCharsets.US_ASCII)));
        c.shutdownInput();
        assertTrue(outputShut.await(30, TimeUnit.SECONDS), "upstream EOF reaches the sink");
        String text;
        synchronized (sink) {
            text = got.toString(StandardCharsets.ISO_8859_1);
        }
        assertTrue(text.startsWith("HTTP/1.1 200 Connection established\r\n"), text);
        assertTrue(text.endsWith("\r\n\r\nover-the-tunnel"), text);
        assertFalse(c.write(ByteBuffer.allocate(0)) && false);
    }
}
