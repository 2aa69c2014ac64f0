package dev.berth.engine.audit;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ReceiptsTest {
    @TempDir Path home;

    private Map<String, Object> receipt(AuditTrail t) throws Exception {
        AuditLog.Position pos = t.record("t", "run", Map.of("run", "run-1", "exit_code", 0));
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("run", "run-1");
        body.put("workspace", "ws-1");
        body.put("exit_code", 0);
        body.put("secrets_used", List.of(Map.of("name", "github", "host", "api.github.com", "count", 2)));
        body.put("audit", pos.toJson());
        return Receipts.sign(body, t.key());
    }

    @Test
    void verify_untouchedReceipt_passesSignatureAndChain() throws Exception {
        try (AuditTrail t = AuditTrail.open(home, AuditTrail.OnFailure.REFUSE)) {
            Map<String, Object> r = receipt(t);
            assertTrue(Receipts.verify(r, t.key()).ok());
            var c = Receipts.verifyAgainstLog(r, home.resolve("audit"), t.key());
            assertTrue(c.ok(), c.message());
        }
    }

    @Test
    void verify_everySingleByteChange_failsTheSignature() throws Exception {
        try (AuditTrail t = AuditTrail.open(home, AuditTrail.OnFailure.REFUSE)) {
            byte[] json = Canonical.encode(receipt(t));
            int signatureAt = new String(json, StandardCharsets.UTF_8).indexOf("\"signature\"");
            int checked = 0;
            for (int i = 0; i < json.length; i++) {
                byte[] b = json.clone();
                b[i] = (byte) (b[i] == '7' ? '8' : b[i] == 'a' ? 'b' : b[i] + 1);
                Map<String, Object> altered;
                try {
                    altered = Canonical.decodeObject(b);
                } catch (IllegalArgumentException e) {
                    continue; // no longer JSON at all: nothing to verify
                }
                if (i > signatureAt && i < signatureAt + 11) continue; // the key name itself: no signature left to check
                assertFalse(Receipts.verify(altered, t.key()).ok(), "byte " + i + " changed and the receipt still verified");
                checked++;
            }
            assertTrue(checked > 100, "only " + checked + " alterations were valid JSON");
        }
    }

    @Test
    void verify_receiptOfAnotherServer_namesBothKeys() throws Exception {
        Map<String, Object> r;
        try (AuditTrail t = AuditTrail.open(home.resolve("a"), AuditTrail.OnFailure.REFUSE)) {
            r = receipt(t);
        }
        ServerKey mine = ServerKey.loadOrCreate(home.resolve("b").resolve("keys"));
        var c = Receipts.verify(r, mine);
        assertFalse(c.ok());
        assertTrue(c.message().contains("signed by key " + r.get("key_id") + ", not by " + mine.keyId()), c.message());
    }

    @Test
    void verifyAgainstLog_recordCutFromTheLog_fails() throws Exception {
        Map<String, Object> r;
        try (AuditTrail t = AuditTrail.open(home, AuditTrail.OnFailure.REFUSE)) {
            r = receipt(t);
        }
        Path f = AuditTrail.tenantLog(home.resolve("audit"), "t");
        java.nio.file.Files.writeString(f, java.nio.file.Files.readAllLines(f).get(0) + "\n");
        var c = Receipts.verifyAgainstLog(r, home.resolve("audit"), ServerKey.loadOrCreate(home.resolve("keys")));
        assertFalse(c.ok());
        assertTrue(c.message().contains("record 1 of tenant:t is not in"), c.message());
    }
}
