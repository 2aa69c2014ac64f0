package dev.berth.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Table of named hostile requests. Each row states the HTTP status the client must see (or -1:
 * connection closed after the tunnel opened) and a fragment the decision reason must contain.
 * Placeholders: {H} loopback HTTP origin port, {P} plain echo port, {T} TLS-checked echo port.
 */
class AdversarialTest extends HarnessTest {
    record Case(String name, String request, byte[] tunnelPayload, int status, String reason) {
        @Override
        public String toString() {
            return name;
        }
    }

    static Case http(String name, String request, int status, String reason) {
        return new Case(name, request, null, status, reason);
    }

    static Case connect(String name, String target, int status, String reason) {
        return new Case(name, "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n\r\n", null, status, reason);
    }

    static Case tls(String name, byte[] payload, String reason) {
        return new Case(name, "CONNECT allowed.test:{T} HTTP/1.1\r\n\r\n", payload, -1, reason);
    }

    static Stream<Case> cases() {
        String get = "GET http://allowed.test:{H}/ HTTP/1.1\r\nHost: allowed.test:{H}\r\n";
        return Stream.of(
                // --- IP literals in every spelling (169.254.169.254 and 10.0.0.1 are named by no entry)
                connect("ipv4 decimal dword metadata", "2852039166:{P}", 403, "IP literal '169.254.169.254' is not named"),
                connect("ipv4 hex dotted metadata", "0xa9.0xfe.0xa9.0xfe:{P}", 403, "IP literal '169.254.169.254' is not named"),
                connect("ipv4 octal dotted metadata", "0251.0376.0251.0376:{P}", 403, "IP literal '169.254.169.254' is not named"),
                connect("ipv4 two-part short form", "169.254.43518:{P}", 403, "IP literal '169.254.169.254' is not named"),
                connect("ipv4 decimal loopback", "2130706433:{P}", 403, "port " + "{P}" + " not allowed for host '127.0.0.1'"),
                connect("ipv4 octal loopback", "0177.0.0.1:{P}", 403, "not allowed for host '127.0.0.1'"),
                connect("ipv4 hex short loopback", "0x7f.1:{P}", 403, "not allowed for host '127.0.0.1'"),
                connect("ipv4 short form loopback", "127.1:{P}", 403, "not allowed for host '127.0.0.1'"),
                connect("raw utf-8 fullwidth digits on the wire", "\uff11\uff12\uff17.\uff10.\uff10.\uff11:{P}", 400, "malformed request target"),
                connect("ipv4 out of range part", "256.1.1.1:{P}", 403, "malformed IPv4 literal"),
                connect("ipv6 loopback bracketed", "[::1]:{P}", 403, "IP literal '::1' is not named"),
                connect("ipv4-mapped ipv6 metadata", "[::ffff:169.254.169.254]:{P}", 403, "IP literal '169.254.169.254' is not named"),
                connect("ipv4-mapped ipv6 hex", "[::ffff:a9fe:a9fe]:{P}", 403, "IP literal '169.254.169.254' is not named"),
                connect("ipv6 zone id", "[fe80::1%25eth0]:{P}", 403, "zone id"),
                connect("ipv6 unbracketed", "::1:{P}", 400, "unbracketed IPv6"),
                connect("ip named by entry but private", "10.0.0.1:443", 403, "IP literal '10.0.0.1' refused: 10.0.0.1 is private"),
                // --- resolved-address classification
                connect("dns to rfc1918", "private.test:{P}", 403, "resolved to 10.0.0.5, refused: 10.0.0.5 is private"),
                connect("dns to cloud metadata", "metadata.test:{P}", 403, "cloud metadata"),
                connect("dns mixed loopback and cgnat", "mixed.test:{P}", 403, "100.64.0.1 is carrier-grade NAT"),
                connect("dns to nat64 embedding private", "nat64.test:{P}", 403, "NAT64 64:ff9b::/96 embedding 10.0.0.1 is private"),
                connect("dns to 6to4 embedding metadata", "sixtofour.test:{P}", 403, "6to4 2002::/16 embedding 169.254.169.254"),
                connect("dns to ula", "ula.test:{P}", 403, "unique-local"),
                // --- names, wildcards, ports
                connect("unlisted host", "evil.test:{P}", 403, "host 'evil.test' matches no allowlist entry"),
                connect("wildcard suffix trick", "evilgithub.com:{P}", 403, "host 'evilgithub.com' matches no allowlist entry"),
                connect("wildcard apex not covered", "github.com:{P}", 403, "host 'github.com' matches no allowlist entry"),
                connect("allowed name as left label", "github.com.evil.com:{P}", 403, "host 'github.com.evil.com' matches no allowlist entry"),
                connect("raw utf-8 idn on the wire", "b\u00fccher.test:{P}", 400, "malformed request target"),
                connect("punycode idn unlisted", "xn--bcher-kva.test:{P}", 403, "host 'xn--bcher-kva.test' matches no allowlist entry"),
                connect("uppercase and trailing dot normalized", "ALLOWED.TEST.:22", 403, "port 22 not allowed for host 'allowed.test'"),
                connect("port not listed", "allowed.test:22", 403, "port 22 not allowed for host 'allowed.test'"),
                connect("connect without port", "allowed.test", 400, "has no port"),
                connect("connect port with leading zero", "allowed.test:0443", 400, "has an invalid port (leading zero)"),
                connect("userinfo in connect", "user@allowed.test:{P}", 400, "userinfo"),
                connect("underscore host", "bad_host.test:{P}", 403, "not a valid hostname"),
                new Case("connect host header mismatch", "CONNECT allowed.test:{P} HTTP/1.1\r\nHost: evil.test:{P}\r\n\r\n", null, 400,
                        "Host header 'evil.test:{P}' does not match CONNECT target"),
                // --- HTTP target / Host checks
                http("host header differs from uri", "GET http://allowed.test:{H}/ HTTP/1.1\r\nHost: evil.test\r\n\r\n", 400,
                        "Host header 'evil.test' does not match request URI host 'allowed.test'"),
                http("host header port differs", "GET http://allowed.test:{H}/ HTTP/1.1\r\nHost: allowed.test:1\r\n\r\n", 400, "does not match request URI"),
                http("duplicate host header", get + "Host: evil.test\r\n\r\n", 400, "multiple Host headers"),
                http("userinfo confusion", "GET http://allowed.test:{H}@evil.test/ HTTP/1.1\r\nHost: evil.test\r\n\r\n", 400, "userinfo"),
                http("origin-form to proxy", "GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n", 400, "not absolute-form"),
                http("ftp absolute-form", "GET ftp://allowed.test/ HTTP/1.1\r\nHost: allowed.test\r\n\r\n", 400, "scheme 'ftp' not supported"),
                http("http missing host header", "GET http://allowed.test:{H}/ HTTP/1.1\r\n\r\n", 400, "without Host header"),
                http("http to denied host", "GET http://evil.test/ HTTP/1.1\r\nHost: evil.test\r\n\r\n", 403, "host 'evil.test' matches no allowlist entry"),
                // --- smuggling shapes
                http("te and cl", get + "Transfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n0\r\n\r\n", 400, "both Transfer-Encoding and Content-Length"),
                http("duplicate te", get + "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400, "duplicate Transfer-Encoding"),
                http("te list", get + "Transfer-Encoding: gzip, chunked\r\n\r\n", 400, "unsupported Transfer-Encoding 'gzip, chunked'"),
                http("te obfuscated", get + "Transfer-Encoding: xchunked\r\n\r\n", 400, "unsupported Transfer-Encoding"),
                http("te space before colon", get + "Transfer-Encoding : chunked\r\n\r\n", 400, "malformed header line"),
                http("differing content-length", get + "Content-Length: 1\r\nContent-Length: 2\r\n\r\nab", 400, "conflicting Content-Length"),
                http("content-length list", get + "Content-Length: 1, 2\r\n\r\nab", 400, "conflicting Content-Length"),
                http("content-length sign", get + "Content-Length: +1\r\n\r\na", 400, "malformed Content-Length"),
                http("obs-fold", get + "X-A: 1\r\n  folded\r\n\r\n", 400, "obs-fold"),
                http("bare lf in head", "GET http://allowed.test:{H}/ HTTP/1.1\nHost: allowed.test:{H}\n\n", 400, "bare CR or LF"),
                http("bare cr in head", get + "X-A: 1\rX-B: 2\r\n\r\n", 400, "bare CR or LF"),
                http("http/1.0 with te", "POST http://allowed.test:{H}/ HTTP/1.0\r\nHost: allowed.test:{H}\r\nTransfer-Encoding: chunked\r\n\r\n", 400, "HTTP/1.0"),
                http("malformed request line", "GET  http://allowed.test/ HTTP/1.1\r\n\r\n", 400, "malformed request line"),
                http("http/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 505, "unsupported HTTP version"),
                new Case("malformed chunk size mid-body", "POST http://allowed.test:{H}/ HTTP/1.1\r\nHost: allowed.test:{H}\r\n"
                        + "Transfer-Encoding: chunked\r\n\r\nzz\r\n", null, -1, "malformed chunk size 'zz'"),
                new Case("chunk data without crlf", "POST http://allowed.test:{H}/ HTTP/1.1\r\nHost: allowed.test:{H}\r\n"
                        + "Transfer-Encoding: chunked\r\n\r\n1\r\nab\r\n", null, -1, "chunk data not followed by CRLF"),
                new Case("chunked trailer", "POST http://allowed.test:{H}/ HTTP/1.1\r\nHost: allowed.test:{H}\r\n"
                        + "Transfer-Encoding: chunked\r\n\r\n0\r\nX-Evil: 1\r\n\r\n", null, -1, "trailer fields are not supported"),
                // --- limits
                http("oversized header", get + "X-Big: " + "a".repeat(9000) + "\r\n\r\n", 431, "request head exceeds 8192 bytes"),
                http("too many headers", get + "X-H: 1\r\n".repeat(60) + "\r\n", 431, "more than 50 header fields"),
                // --- TLS SNI gate (tunnel opens, then closes)
                tls("sni mismatch", ClientHellos.withSni("evil.test"), "TLS SNI 'evil.test' does not match CONNECT host 'allowed.test'"),
                tls("sni missing", ClientHellos.withSni(), "TLS ClientHello has no SNI"),
                tls("sni two names", ClientHellos.withSni("allowed.test", "evil.test"), "more than one host_name"),
                tls("not tls at all", "GET / HTTP/1.1\r\n\r\n".getBytes(StandardCharsets.US_ASCII), "not a TLS handshake record"),
                tls("sni case and trailing dot normalized but different", ClientHellos.withSni("ALLOWED.TEST.evil"), "does not match CONNECT host"));
    }

    static String fill(String s) {
        return s.replace("{H}", String.valueOf(h.http.port())).replace("{P}", String.valueOf(h.plainEcho.port()))
                .replace("{T}", String.valueOf(h.tlsEcho.port()));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void hostileRequest_anyShape_deniedWithReason(Case c) throws Exception {
        int before = h.decisions.size();
        int accepts = h.tlsEcho.accepted.size() + h.plainEcho.accepted.size();
        int httpSeen = h.http.seenPaths.size();
        try (Socket s = h.connect()) {
            s.getOutputStream().write(fill(c.request()).getBytes(StandardCharsets.UTF_8));
            Harness.Response r = Harness.Response.read(s.getInputStream());
            if (c.tunnelPayload() != null) {
                assertEquals(200, r.status(), "tunnel opens before the ClientHello is checked");
                s.getOutputStream().write(c.tunnelPayload());
                assertTrue(Harness.closedByPeer(s), "tunnel must be torn down");
            } else if (c.status() != -1) {
                assertEquals(c.status(), r.status(), () -> "response: " + r);
            }
        }
        Decision first = h.awaitDecision(before);
        // Mid-body framing errors follow an allow decision for the (valid) head.
        Decision d = first.allowed() && c.status() == -1 && c.tunnelPayload() == null ? h.awaitDecision(before + 1) : first;
        assertFalse(d.allowed(), () -> "should deny: " + d);
        String expected = fill(c.reason());
        assertTrue(d.reason().contains(expected), () -> "reason '" + d.reason() + "' lacks '" + expected + "'");
        if (c.status() == -1) return; // mid-body: the valid head was (correctly) forwarded first
        assertEquals(httpSeen, h.http.seenPaths.size(), "nothing reached the HTTP origin");
        if (c.tunnelPayload() == null) {
            assertEquals(accepts, h.tlsEcho.accepted.size() + h.plainEcho.accepted.size(), "no upstream connection was made");
        }
    }
}
