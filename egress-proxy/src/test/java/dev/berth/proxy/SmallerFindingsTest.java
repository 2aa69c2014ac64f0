package dev.berth.proxy;

import dev.berth.proxy.audit.AuditRecord;
import dev.berth.proxy.policy.Policy;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** Issue 16, finding 6 (the smaller ones): forged hop headers, ambiguous ports, shared suffixes, reasonless audits. */
class SmallerFindingsTest extends HarnessTest {
    @Test
    void forwardingHeadersFromTheWorkspace_strippedBeforeTheOrigin() throws Exception {
        int port = h.http.port();
        Harness.Response r = h.send("GET http://allowed.test:" + port + "/fwd HTTP/1.1\r\nHost: allowed.test:" + port + "\r\n"
                + "Forwarded: for=10.0.0.1;host=internal\r\nX-Forwarded-For: 10.0.0.1\r\nX-Forwarded-Host: internal.example\r\n"
                + "X-Forwarded-Proto: https\r\nX-Upstream-Https-Proxy: http://evil.example:8080\r\nX-Real-IP: 10.0.0.1\r\n"
                + "X-Kept: yes\r\nConnection: close\r\n\r\n");
        assertEquals(200, r.status(), r.toString());
        Map<String, List<String>> seen = h.http.seenHeaders.getLast();
        for (String name : seen.keySet()) {
            String lower = name.toLowerCase(java.util.Locale.ROOT);
            assertFalse(lower.equals("forwarded") || lower.startsWith("x-forwarded-") || lower.equals("x-upstream-https-proxy")
                    || lower.equals("x-real-ip"), () -> name + " reached the origin: " + seen);
        }
        assertEquals(List.of("yes"), seen.get("X-kept"));
    }

    @Test
    void policyWithAttackerOwnableSuffix_warnsAtStartAndInTheAudit() throws Exception {
        Policy p = Policy.of(List.of("*.s3.amazonaws.com", "*.githubusercontent.com", "*.github.com", "raw.githubusercontent.com"));
        assertEquals(List.of(
                "allowlist entry '*.s3.amazonaws.com:[443]' admits names anyone can own under s3.amazonaws.com (buckets, repositories,"
                        + " apps of strangers): list the exact hosts you need instead",
                "allowlist entry '*.githubusercontent.com:[443]' admits names anyone can own under githubusercontent.com (buckets,"
                        + " repositories, apps of strangers): list the exact hosts you need instead"), p.sharedSuffixWarnings());
        List<AuditRecord> audit = new java.util.concurrent.CopyOnWriteArrayList<>();
        try (EgressProxy proxy = EgressProxy.builder(ProxyConfig.builder().ceiling(p).build()).auditSink(audit::add).start()) {
            assertEquals(2, audit.stream().filter(a -> a.event().equals("policy-warning")).count(), audit.toString());
        }
        assertEquals(List.of(), ConfigLoader.load(java.nio.file.Path.of("../examples/egress-policy.json")).ceiling().sharedSuffixWarnings(),
                "the shipped example must not allow an attacker-ownable suffix");
    }

    @Test
    void secretBindingAndApprovableHostUnderAnOwnableSuffix_warnAtStartAndInTheAudit() throws Exception {
        Policy ceiling = Policy.of(List.of("*.s3.amazonaws.com"));
        ProxyConfig cfg = ProxyConfig.builder().ceiling(ceiling)
                .secret(dev.berth.proxy.policy.SecretBinding.of("bucket", "BUCKET_TOKEN", List.of("*.s3.amazonaws.com"), "v"))
                .approval(new dev.berth.proxy.policy.ApprovalSettings(Policy.of(List.of("*.github.io")), List.of(java.time.Duration.ofHours(1)),
                        java.time.Duration.ofSeconds(5)))
                .build();
        List<AuditRecord> audit = new java.util.concurrent.CopyOnWriteArrayList<>();
        try (EgressProxy proxy = EgressProxy.builder(cfg).auditSink(audit::add).start()) {
            List<String> warnings = audit.stream().filter(a -> a.event().equals("policy-warning")).map(AuditRecord::reason).toList();
            assertEquals(List.of(
                    "allowlist entry '*.s3.amazonaws.com:[443]' admits names anyone can own under s3.amazonaws.com (buckets, repositories,"
                            + " apps of strangers): list the exact hosts you need instead",
                    "secret 'bucket' bound to '*.s3.amazonaws.com' admits names anyone can own under s3.amazonaws.com (buckets, repositories,"
                            + " apps of strangers): list the exact hosts you need instead",
                    "approval.hosts entry '*.github.io:[443]' admits names anyone can own under github.io (buckets, repositories,"
                            + " apps of strangers): list the exact hosts you need instead"), warnings);
        }
    }

    @Test
    void malformedChunkedBodyBeforeTheDecision_auditRecordCarriesAReason() throws Exception {
        int port = h.http.port();
        try (Socket s = h.connect()) {
            // head and broken body in one write: the body fails while the name is still being resolved
            s.getOutputStream().write(("POST http://allowed.test:" + port + "/chunk HTTP/1.1\r\nHost: allowed.test:" + port + "\r\n"
                    + "Transfer-Encoding: chunked\r\n\r\nzz\r\n").getBytes(StandardCharsets.US_ASCII));
            Harness.closedByPeer(s);
        }
        AuditRecord a = h.awaitAudit(x -> "decision".equals(x.event()) && "POST".equals(x.method()) && x.closeReason() != null
                && x.closeReason().contains("malformed chunk size 'zz'"));
        assertNotNull(a.reason(), a.toString());
        assertTrue(a.reason().contains("malformed chunk size 'zz'") || a.decision().equals("allow"), a.toString());
        for (AuditRecord r : h.audit) {
            if ("decision".equals(r.event())) assertNotNull(r.reason(), () -> "decision without a reason: " + r);
        }
    }
}
