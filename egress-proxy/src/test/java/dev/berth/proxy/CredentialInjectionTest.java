package dev.berth.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.berth.proxy.audit.AuditRecord;
import dev.berth.proxy.credentials.CredentialRegistry;
import dev.berth.proxy.policy.SecretBinding;
import dev.berth.proxy.tls.InterceptionCa;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.security.cert.X509Certificate;
import java.util.List;
import java.util.regex.Pattern;
import javax.net.ssl.SSLSocket;
import org.junit.jupiter.api.Test;

/**
 * Credential injection end to end: a real JDK HttpClient (trusting only the proxy's CA) or raw
 * sockets, through the proxy, to real HTTPS/HTTP upstreams on loopback.
 */
class CredentialInjectionTest extends CredentialFixtureTest {
    private static HttpResponse<String> get(HttpClient c, String url, String authorization) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url));
        if (authorization != null) b.header("Authorization", authorization);
        return c.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    private String api(String path) {
        return "https://api.cred.test:" + f.pA + path;
    }

    @Test
    void bearer_placeholderToBoundHost_realValueArrivesAndEchoIsRedacted() throws Exception {
        try (CredentialGrant g = f.proxy.mint("ws-a", "run-a", List.of("github"));
             HttpClient c = f.client(f.listenerA, HttpClient.Version.HTTP_1_1)) {
            String ph = g.environment().get("GITHUB_TOKEN");
            assertTrue(Pattern.matches("berth-secret-github-[0-9a-f]{32}", ph), ph);
            HttpResponse<String> r = get(c, api("/echo?expect=bearer"), "Bearer " + ph);
            assertEquals(200, r.statusCode(), r.body());
            assertTrue(r.body().startsWith("auth=real sha=" + CredentialFixture.sha256("Bearer " + CredentialFixture.GITHUB_SECRET)), r.body());
            assertEquals("Bearer " + ph, r.headers().firstValue("X-Echo-Authorization").orElseThrow(), "secret echoed back in a header");
            Decision d = f.await(f.decisions, x -> x.kind().equals("https") && x.reason().contains("injected credential 'github'"));
            assertTrue(d.allowed(), d.reason());
            assertEquals(List.of(new CredentialUse("github", "api.cred.test", 1)), g.uses());
        }
    }

    @Test
    void basic_placeholderInsideBase64_isSubstitutedAndReEncoded() throws Exception {
        try (CredentialGrant g = f.proxy.mint("ws-a", "run-a", List.of("github"));
             HttpClient c = f.client(f.listenerA, HttpClient.Version.HTTP_1_1)) {
            String sent = CredentialFixture.basic("x-access-token:" + g.environment().get("GITHUB_TOKEN"));
            HttpResponse<String> r = get(c, api("/info/refs?expect=basic"), sent);
            assertEquals(200, r.statusCode(), r.body());
            assertTrue(r.body().startsWith("auth=real "), r.body());
            assertEquals(sent, r.headers().firstValue("X-Echo-Authorization").orElseThrow(), "base64 of the secret echoed back");
        }
    }

    @Test
    void http2Client_alpnOffersOnlyHttp11_requestStillInjected() throws Exception {
        try (CredentialGrant g = f.proxy.mint("ws-a", "run-a", List.of("github"));
             HttpClient c = f.client(f.listenerA, HttpClient.Version.HTTP_2)) {
            HttpResponse<String> r = get(c, api("/h2?expect=bearer"), "Bearer " + g.environment().get("GITHUB_TOKEN"));
            assertEquals(200, r.statusCode(), r.body());
            assertEquals(HttpClient.Version.HTTP_1_1, r.version());
            assertTrue(r.body().startsWith("auth=real "), r.body());
        }
    }

    @Test
    void keepAlive_secondRequestOnSameTunnel_decidedAgainAndCounted() throws Exception {
        try (CredentialGrant g = f.proxy.mint("ws-a", "run-a", List.of("github"));
             HttpClient c = f.client(f.listenerA, HttpClient.Version.HTTP_1_1)) {
            String auth = "Bearer " + g.environment().get("GITHUB_TOKEN");
            int before = f.decisions.size();
            assertEquals(200, get(c, api("/one?expect=bearer"), auth).statusCode());
            assertEquals(200, get(c, api("/two?expect=bearer"), auth).statusCode());
            // decisions are published as they are made, on the proxy's event loop: wait for the second https one
            Harness.await(() -> f.decisions.subList(before, f.decisions.size()).stream()
                    .filter(d -> d.kind().equals("https") && d.allowed()).count() >= 2, "two https decisions");
            List<Decision> mine = f.decisions.subList(before, f.decisions.size());
            assertEquals(1, mine.stream().filter(d -> d.kind().equals("connect")).count(), mine.toString());
            assertEquals(2, mine.stream().filter(d -> d.kind().equals("https") && d.allowed()).count(), mine.toString());
            assertTrue(mine.stream().filter(d -> d.kind().equals("connect")).findFirst().orElseThrow().reason()
                    .contains("TLS intercepted for credential injection (binding 'github')"), mine.toString());
            assertEquals(List.of(new CredentialUse("github", "api.cred.test", 2)), g.uses());
        }
    }

    @Test
    void revokedPlaceholder_refused403WithReason() throws Exception {
        CredentialGrant g = f.proxy.mint("ws-a", "run-a", List.of("github"));
        String ph = g.environment().get("GITHUB_TOKEN");
        g.close();
        g.close(); // idempotent
        try (HttpClient c = f.client(f.listenerA, HttpClient.Version.HTTP_1_1)) {
            HttpResponse<String> r = get(c, api("/echo"), "Bearer " + ph);
            assertEquals(403, r.statusCode());
            assertEquals(CredentialRegistry.UNKNOWN, r.headers().firstValue("X-Berth-Denial").orElseThrow());
        }
        assertTrue(f.seenAuth.stream().noneMatch(a -> a.contains(ph)), "refused request reached the upstream");
        assertEquals(List.of(), g.uses());
    }

    @Test
    void otherWorkspacesPlaceholder_refused403() throws Exception {
        try (CredentialGrant g = f.proxy.mint("ws-b", "run-b", List.of("github"));
             HttpClient c = f.client(f.listenerA, HttpClient.Version.HTTP_1_1)) {
            HttpResponse<String> r = get(c, api("/echo"), "Bearer " + g.environment().get("GITHUB_TOKEN"));
            assertEquals(403, r.statusCode());
            assertEquals(CredentialRegistry.OTHER_WORKSPACE, r.headers().firstValue("X-Berth-Denial").orElseThrow());
            Decision d = f.await(f.decisions, x -> !x.allowed() && x.reason().equals(CredentialRegistry.OTHER_WORKSPACE));
            assertEquals("https", d.kind());
        }
    }

    @Test
    void placeholderSentToInterceptedHostOfAnotherBinding_refused403() throws Exception {
        try (CredentialGrant g = f.proxy.mint("ws-a", "run-a", List.of("github", "npm"));
             HttpClient c = f.client(f.listenerA, HttpClient.Version.HTTP_1_1)) {
            HttpResponse<String> r = get(c, "https://registry.cred.test:" + f.pA + "/pkg", "Bearer " + g.environment().get("GITHUB_TOKEN"));
            assertEquals(403, r.statusCode());
            assertEquals("credential 'github' may only be sent to api.cred.test; this request goes to registry.cred.test",
                    r.headers().firstValue("X-Berth-Denial").orElseThrow());
        }
    }

    @Test
    void plainHttp_bindingWithoutUnsafeAllowPlainHttp_refused() throws Exception {
        try (CredentialGrant g = f.proxy.mint("ws-a", "run-a", List.of("github"));
             HttpClient c = f.client(f.listenerA, HttpClient.Version.HTTP_1_1)) {
            HttpResponse<String> r = get(c, "http://api.cred.test:" + f.pH + "/x", "Bearer " + g.environment().get("GITHUB_TOKEN"));
            assertEquals(403, r.statusCode());
            assertEquals("credential 'github' is injected only over HTTPS", r.headers().firstValue("X-Berth-Denial").orElseThrow());
            // ... and to a host it is not bound to, the host check speaks first.
            r = get(c, "http://allowed.test:" + f.pH + "/x", "Bearer " + g.environment().get("GITHUB_TOKEN"));
            assertEquals(403, r.statusCode());
            assertEquals("credential 'github' may only be sent to api.cred.test; this request goes to allowed.test",
                    r.headers().firstValue("X-Berth-Denial").orElseThrow());
        }
    }

    @Test
    void plainHttp_bindingWithUnsafeAllowPlainHttp_injectedInAuthorizationOnly() throws Exception {
        try (CredentialGrant g = f.proxy.mint("ws-a", "run-a", List.of("plainok"));
             HttpClient c = f.client(f.listenerA, HttpClient.Version.HTTP_1_1)) {
            String ph = g.environment().get("PLAINOK_TOKEN");
            HttpResponse<String> r = get(c, "http://allowed.test:" + f.pH + "/q", "token " + ph);
            assertEquals(200, r.statusCode(), r.body());
            assertEquals(List.of("token " + CredentialFixture.PLAIN_SECRET), f.http.seenHeaders.getLast().get("Authorization"));
            assertEquals(List.of(new CredentialUse("plainok", "allowed.test", 1)), g.uses());
            // in the target it is refused, as over HTTPS
            r = get(c, "http://allowed.test:" + f.pH + "/q?token=" + ph, "token " + ph);
            assertEquals(403, r.statusCode());
            assertTrue(r.headers().firstValue("X-Berth-Denial").orElseThrow().startsWith("credential placeholder in the request target is refused"));
        }
    }

    @Test
    void unboundHost_notIntercepted_clientSeesUpstreamsOwnCertificate() throws Exception {
        try (Socket s = f.connect("plain.cred.test", f.pA);
             SSLSocket tls = CredentialFixture.tls(s, "plain.cred.test", f.pA, f.upstreamCa.certificatePem(), f.proxy.caCertificatePem())) {
            X509Certificate peer = (X509Certificate) tls.getSession().getPeerCertificates()[0];
            assertEquals(f.upstreamCa.certificate().getSubjectX500Principal(), peer.getIssuerX500Principal());
        }
        Decision d = f.await(f.decisions, x -> x.kind().equals("connect") && x.host().equals("plain.cred.test"));
        assertTrue(d.reason().contains("TLS SNI matches") && !d.reason().contains("intercepted"), d.reason());
    }

    @Test
    void boundHost_intercepted_leafIssuedByProxyCaForThatHost() throws Exception {
        try (Socket s = f.connect("api.cred.test", f.pA);
             SSLSocket tls = CredentialFixture.tls(s, "api.cred.test", f.pA, f.proxy.caCertificatePem())) {
            X509Certificate leaf = (X509Certificate) tls.getSession().getPeerCertificates()[0];
            assertTrue(leaf.getIssuerX500Principal().getName().contains("Berth egress interception CA"), leaf.getIssuerX500Principal().getName());
            assertEquals(List.of(List.of(2, "api.cred.test")), leaf.getSubjectAlternativeNames().stream().map(List::copyOf).toList());
            assertEquals(-1, leaf.getBasicConstraints());
            assertTrue(leaf.getNotAfter().getTime() - System.currentTimeMillis() <= InterceptionCa.LEAF_LIFETIME.toMillis());
        }
    }

    @Test
    void interceptedConnect_sniMismatch_refusedAndDecisionSaysWhy() throws Exception {
        try (Socket s = f.connect("api.cred.test", f.pA)) {
            assertThrows(java.io.IOException.class, () -> CredentialFixture.tls(s, "evil.cred.test", f.pA, f.proxy.caCertificatePem()));
        }
        Decision d = f.await(f.decisions, x -> x.kind().equals("connect") && !x.allowed() && x.host().equals("api.cred.test"));
        assertEquals("TLS SNI 'evil.cred.test' does not match CONNECT host 'api.cred.test'", d.reason());
    }

    @Test
    void insideTunnel_absoluteFormNestedConnectAndForeignHost_refused400() throws Exception {
        String host = "api.cred.test:" + f.pA;
        for (String[] c : new String[][] {
                {"GET https://" + host + "/x HTTP/1.1\r\nHost: " + host + "\r\n\r\n", "must be origin-form (/path)"},
                {"CONNECT evil.cred.test:443 HTTP/1.1\r\nHost: evil.cred.test:443\r\n\r\n", "CONNECT inside an intercepted TLS connection"},
                {"GET /x HTTP/1.1\r\nHost: registry.cred.test:" + f.pA + "\r\n\r\n", "does not match the intercepted CONNECT host"},
                {"GET /x HTTP/1.1\r\n\r\n", "HTTP/1.1 request without Host header"}}) {
            try (Socket s = f.connect("api.cred.test", f.pA);
                 SSLSocket tls = CredentialFixture.tls(s, "api.cred.test", f.pA, f.proxy.caCertificatePem())) {
                Harness.write(tls, c[0]);
                Harness.Response r = Harness.Response.read(tls.getInputStream());
                assertEquals(400, r.status(), c[0]);
                assertTrue(r.header("X-Berth-Denial").contains(c[1]), r.header("X-Berth-Denial"));
            }
        }
    }

    /**
     * Two requests written at once into an intercepted tunnel (pipelining; also what a client's next request looks
     * like when it arrives before the proxy has finished with the previous response): the second is decoded from the
     * proxy's buffer once the first is answered. Its decrypted bytes wait behind the TLS handler, so the decoder must
     * be re-run where it sits, not fed from the pipeline's head (where an empty read decrypts to nothing).
     */
    @Test
    void pipelinedRequestsInsideInterceptedTunnel_bothAnswered() throws Exception {
        try (CredentialGrant g = f.proxy.mint("ws-a", "run-a", List.of("github"));
             Socket s = f.connect("api.cred.test", f.pA);
             SSLSocket tls = CredentialFixture.tls(s, "api.cred.test", f.pA, f.proxy.caCertificatePem())) {
            tls.setSoTimeout(20_000);
            String host = "api.cred.test:" + f.pA;
            String auth = "Authorization: Bearer " + g.environment().get("GITHUB_TOKEN") + "\r\n";
            Harness.write(tls, "GET /one?expect=bearer HTTP/1.1\r\nHost: " + host + "\r\n" + auth + "\r\n"
                    + "GET /two?expect=bearer HTTP/1.1\r\nHost: " + host + "\r\n" + auth + "\r\n");
            assertEquals(200, Harness.Response.read(tls.getInputStream()).status());
            assertEquals(200, Harness.Response.read(tls.getInputStream()).status(), "the pipelined second request was answered");
        }
    }

    /** What busybox wget sends a proxy for an https:// URL: absolute-form, no CONNECT. The proxy speaks TLS upstream. */
    static String rawRequest(EgressProxy.Listener l, String request) throws Exception {
        try (Socket s = new Socket(l.address().getAddress(), l.address().getPort())) {
            s.setSoTimeout(10_000);
            s.getOutputStream().write(request.getBytes(java.nio.charset.StandardCharsets.ISO_8859_1));
            return new String(s.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.ISO_8859_1);
        }
    }

    @Test
    void httpsAbsoluteForm_proxyOriginatesVerifiedTls_andInjects() throws Exception {
        try (CredentialGrant g = f.proxy.mint("ws-a", "run-a", List.of("github"))) {
            String ph = g.environment().get("GITHUB_TOKEN");
            String r = rawRequest(f.listenerA, "GET https://api.cred.test:" + f.pA + "/echo?expect=bearer HTTP/1.1\r\nHost: api.cred.test:"
                    + f.pA + "\r\nAuthorization: Bearer " + ph + "\r\nConnection: close\r\n\r\n");
            assertTrue(r.startsWith("HTTP/1.1 200"), r);
            assertTrue(r.contains("auth=real sha=" + CredentialFixture.sha256("Bearer " + CredentialFixture.GITHUB_SECRET)), r);
            assertFalse(r.contains(CredentialFixture.GITHUB_SECRET), r);
            assertEquals(List.of(new CredentialUse("github", "api.cred.test", 1)), g.uses());
        }
        String bad = rawRequest(f.listenerA, "GET https://untrusted.cred.test:" + f.pB + "/x HTTP/1.1\r\nHost: untrusted.cred.test:" + f.pB
                + "\r\nConnection: close\r\n\r\n");
        assertTrue(bad.startsWith("HTTP/1.1 502") && bad.contains("upstream TLS verification failed for host untrusted.cred.test"), bad);
    }

    @Test
    void upstreamWithUntrustedCertificate_502WithReasonAndAudit() throws Exception {
        try (HttpClient c = f.client(f.listenerA, HttpClient.Version.HTTP_1_1)) {
            HttpResponse<String> r = get(c, "https://untrusted.cred.test:" + f.pB + "/x", null);
            assertEquals(502, r.statusCode());
            assertTrue(r.body().startsWith("upstream TLS verification failed for host untrusted.cred.test: "), r.body());
            r = get(c, "https://wrongname.cred.test:" + f.pA + "/x", null);
            assertEquals(502, r.statusCode());
            assertTrue(r.body().startsWith("upstream TLS verification failed for host wrongname.cred.test: "), r.body());
        }
        AuditRecord a = f.awaitAudit(x -> "https".equals(x.kind()) && "untrusted.cred.test".equals(x.host()));
        assertTrue(a.closeReason().startsWith("upstream TLS verification failed"), a.toString());
    }

    @Test
    void secretValues_neverInDecisionsAuditOrToString() throws Exception {
        try (CredentialGrant g = f.proxy.mint("ws-a", "run-a", List.of("github", "npm"));
             HttpClient c = f.client(f.listenerA, HttpClient.Version.HTTP_1_1)) {
            get(c, api("/a?expect=bearer"), "Bearer " + g.environment().get("GITHUB_TOKEN"));
            get(c, api("/b?expect=basic"), CredentialFixture.basic("x-access-token:" + g.environment().get("GITHUB_TOKEN")));
            get(c, "https://registry.cred.test:" + f.pA + "/c", "Bearer " + g.environment().get("NPM_TOKEN"));
            assertFalse(g.toString().contains(CredentialFixture.GITHUB_SECRET));
        }
        // the audit records of the three requests come when their connections close (the client closed them above)
        Harness.await(() -> f.audit.stream().anyMatch(a -> a.reason() != null && a.reason().contains("injected credential 'npm'")),
                "the audit record of the npm injection");
        String basicSecret = CredentialFixture.basic("x-access-token:" + CredentialFixture.GITHUB_SECRET).substring(6);
        for (String secret : List.of(CredentialFixture.GITHUB_SECRET, CredentialFixture.NPM_SECRET, basicSecret)) {
            for (Object o : f.audit) assertFalse(o.toString().contains(secret), o::toString);
            for (Object o : f.decisions) assertFalse(o.toString().contains(secret), o::toString);
        }
        assertTrue(f.audit.stream().anyMatch(a -> a.reason() != null && a.reason().contains("injected credential 'npm'")), f.audit.toString());
        SecretBinding b = SecretBinding.of("x", "X", List.of("a.example"), "topsecret");
        assertFalse(b.toString().contains("topsecret"), b.toString());
    }

    @Test
    void attachMode_interceptedRequest_injectedAndGuestSeesCleanClose() throws Exception {
        List<String> events = new java.util.concurrent.CopyOnWriteArrayList<>();
        java.util.concurrent.CountDownLatch closed = new java.util.concurrent.CountDownLatch(1);
        EgressContext ctx = new EgressContext("ws-a", "run-att", f.ceiling, f.decisions::add, java.util.Set.of("github"));
        try (java.net.ServerSocket guestPort = new java.net.ServerSocket(0, 10, java.net.InetAddress.getLoopbackAddress());
             CredentialGrant g = f.proxy.mint("ws-a", "run-att", List.of("github"))) {
            // Stands in for the engine: bytes from a guest socket go through the attach API.
            Thread.ofVirtual().start(() -> {
                try (Socket s = guestPort.accept()) {
                    var out = s.getOutputStream();
                    ProxyConnection conn = f.proxy.attach(ctx, new ClientSink() {
                        @Override public void write(java.nio.ByteBuffer b) {
                            byte[] a = new byte[b.remaining()];
                            b.get(a);
                            try { out.write(a); out.flush(); } catch (java.io.IOException e) { events.add("write failed"); }
                        }
                        @Override public void shutdownOutput() {
                            events.add("shutdownOutput");
                            try { s.shutdownOutput(); } catch (java.io.IOException ignored) { }
                        }
                        @Override public void reset(String reason) { events.add("reset " + reason); }
                        @Override public void closed() { closed.countDown(); }
                    });
                    byte[] buf = new byte[16384];
                    int n;
                    while ((n = s.getInputStream().read(buf)) > 0) conn.write(java.nio.ByteBuffer.wrap(buf, 0, n));
                    conn.shutdownInput();
                    closed.await(5, java.util.concurrent.TimeUnit.SECONDS);
                } catch (Exception e) {
                    events.add("bridge failed " + e);
                }
            });
            try (Socket s = new Socket(guestPort.getInetAddress(), guestPort.getLocalPort())) {
                s.setSoTimeout(5000);
                Harness.write(s, "CONNECT api.cred.test:" + f.pA + " HTTP/1.1\r\nHost: api.cred.test:" + f.pA + "\r\n\r\n");
                assertEquals(200, Harness.Response.read(s.getInputStream()).status());
                SSLSocket tls = CredentialFixture.tls(s, "api.cred.test", f.pA, f.proxy.caCertificatePem());
                Harness.write(tls, "GET /attach?expect=bearer HTTP/1.1\r\nHost: api.cred.test:" + f.pA + "\r\nAuthorization: Bearer "
                        + g.environment().get("GITHUB_TOKEN") + "\r\n\r\n");
                Harness.Response r = Harness.Response.read(tls.getInputStream());
                assertEquals(200, r.status(), r.toString());
                assertTrue(r.body().startsWith("auth=real "), r.body());
                s.shutdownOutput(); // guest EOF: the proxy finishes and closes its side in order
                assertTrue(closed.await(5, java.util.concurrent.TimeUnit.SECONDS), events.toString());
            }
            assertEquals(List.of(new CredentialUse("github", "api.cred.test", 1)), g.uses());
            assertTrue(events.contains("shutdownOutput") && events.stream().noneMatch(e -> e.startsWith("reset") || e.contains("failed")),
                    events.toString());
        }
    }

    @Test
    void mint_unknownBinding_namesItAndListsConfigured() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> f.proxy.mint("ws-a", "run-a", List.of("github", "gitlab")));
        assertEquals("unknown secret binding(s) [gitlab]; configured: [github, npm, untrusted, wrongname, plainok, apikey]", e.getMessage());
    }

    @Test
    void placeholders_distinctPerMint() {
        try (CredentialGrant a = f.proxy.mint("ws-a", "r1", List.of("github")); CredentialGrant b = f.proxy.mint("ws-a", "r2", List.of("github"))) {
            assertNotEquals(a.environment().get("GITHUB_TOKEN"), b.environment().get("GITHUB_TOKEN"));
        }
    }
}
