package dev.berth.proxy;

import dev.berth.proxy.audit.AuditRecord;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import javax.net.ssl.SSLSocket;
import org.junit.jupiter.api.Test;

/**
 * Issue 16, finding 4: revocation closes what was opened under a grant (in-flight and streamed requests do not
 * finish), and placeholders have an operator lifetime ({@code placeholderTtl}) after which the grant expires the
 * same way, with a reason that says so.
 */
class RevocationTest extends CredentialFixtureTest {
    /** Reads until {@code marker} has arrived (the stream is live). */
    private static void readUntil(InputStream in, String marker) throws IOException {
        StringBuilder sb = new StringBuilder();
        while (!sb.toString().contains(marker)) {
            int c = in.read();
            if (c < 0) throw new IOException("closed before '" + marker + "': " + sb);
            sb.append((char) c);
        }
    }

    /** True once the peer closed or reset the connection; false if it is still open after the socket timeout. */
    private static boolean cut(Socket s) throws IOException {
        try {
            while (s.getInputStream().read() >= 0) {
                // the rest of what was already sent (the chunk's CRLF); the stream itself adds nothing more
            }
            return true;
        } catch (SocketTimeoutException stillOpen) {
            return false;
        } catch (IOException reset) {
            return true;
        }
    }

    private SSLSocket streaming(CredentialGrant g) throws Exception {
        Socket raw = f.connect("api.cred.test", f.pA);
        SSLSocket tls = CredentialFixture.tls(raw, "api.cred.test", f.pA, f.proxy.caCertificatePem());
        tls.setSoTimeout(5000);
        tls.getOutputStream().write(("GET /stream HTTP/1.1\r\nHost: api.cred.test:" + f.pA + "\r\nAuthorization: Bearer "
                + g.placeholder("github") + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
        tls.getOutputStream().flush();
        readUntil(tls.getInputStream(), "first-chunk");
        return tls;
    }

    @Test
    void revoke_closesStreamedRequestInFlight_andTheRunsOtherTunnels() throws Exception {
        CredentialGrant g = f.proxy.mint("ws-a", "run-a", List.of("github"));
        try (SSLSocket stream = streaming(g);
             Socket tunnel = f.connect("plain.cred.test", f.pA);
             SSLSocket plain = CredentialFixture.tls(tunnel, "plain.cred.test", f.pA, f.upstreamCa.certificatePem())) {
            plain.setSoTimeout(5000);
            g.close();
            assertTrue(cut(stream), "the streamed response went on after its run's grant was revoked");
            assertTrue(cut(plain), "a tunnel of the run stayed open after its grant was revoked");
        }
        AuditRecord a = f.awaitAudit(r -> "decision".equals(r.event()) && "GET".equals(r.method()) && r.closeReason() != null
                && r.closeReason().equals("credential grant of run 'run-a' was revoked (its run ended)"));
        assertEquals("allow", a.decision());
    }

    @Test
    void placeholderOlderThanTheTtl_expires_refusedWithReason_andItsConnectionsClosed() throws Exception {
        CredentialGrant g = f.proxy.mint("ws-a", "run-a", List.of("github"));
        String ph = g.placeholder("github");
        try (SSLSocket stream = streaming(g)) {
            f.clockOffset.addAndGet(f.proxy.credentialsTtl().plusMinutes(1).toNanos());
            f.proxy.expireCredentials();
            assertTrue(g.expired(), g.toString());
            assertTrue(cut(stream), "the streamed response went on after the grant expired");
        }
        try (var c = f.client(f.listenerA, java.net.http.HttpClient.Version.HTTP_1_1)) {
            var r = c.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create("https://api.cred.test:" + f.pA + "/late"))
                    .header("Authorization", "Bearer " + ph).build(), java.net.http.HttpResponse.BodyHandlers.ofString());
            assertEquals(403, r.statusCode());
            assertEquals("credential placeholder expired: grant of run 'run-a' outlived the operator's placeholder lifetime (placeholderTtlMs)",
                    r.headers().firstValue("X-Berth-Denial").orElseThrow());
        }
        assertEquals(Duration.ofHours(12), ProxyConfig.builder().build().placeholderTtl(), "default lifetime");
    }
}
