package dev.berth.engine.audit;

import java.nio.file.Path;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Signs and checks run receipts. A receipt is a JSON object ({@code format: "berth-receipt"}, {@code version}, what
 * the run was and did, its position in the tenant's audit chain) signed with the server's Ed25519 key: the signature
 * covers the {@link Canonical} encoding of every field but {@code signature}, so changing any byte of what it states
 * breaks it, however the JSON is re-spaced. Stateless and thread-safe.
 */
public final class Receipts {
    public static final String FORMAT = "berth-receipt";
    public static final int VERSION = 1;

    private Receipts() {}

    /** The outcome of a check; {@code message} says what was checked or what failed. */
    public record Check(boolean ok, String message) {}

    /** Adds {@code format}, {@code version}, {@code key_id} and {@code signature} to {@code body}. */
    public static Map<String, Object> sign(Map<String, Object> body, ServerKey key) {
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("format", FORMAT);
        r.put("version", VERSION);
        r.putAll(body);
        r.put("key_id", key.keyId());
        r.put("signature", Base64.getEncoder().encodeToString(key.sign(Canonical.encode(r))));
        return r;
    }

    /** Checks the signature against {@code key}, refusing a receipt of another key or a newer format by name. */
    public static Check verify(Map<String, Object> receipt, ServerKey key) {
        if (!FORMAT.equals(receipt.get("format"))) return new Check(false, "not a Berth receipt (format " + receipt.get("format") + ")");
        if (!(receipt.get("version") instanceof Number v) || v.intValue() > VERSION) {
            return new Check(false, "receipt format version " + receipt.get("version") + " is newer than this Berth reads ("
                    + VERSION + "); verify it with the version that issued it");
        }
        Object kid = receipt.get("key_id");
        if (!key.keyId().equals(kid)) {
            return new Check(false, "the receipt was signed by key " + kid + ", not by " + key.keyId() + " (this server's key,"
                    + " or the one given): it comes from another server; verify it with that server's public key (--public-key FILE)");
        }
        Map<String, Object> body = new LinkedHashMap<>(receipt);
        Object sig = body.remove("signature");
        byte[] s;
        try {
            s = Base64.getDecoder().decode(String.valueOf(sig));
            // the decoder ignores the spare bits of the last character: a changed spare bit is still a changed receipt
            if (!Base64.getEncoder().encodeToString(s).equals(sig)) throw new IllegalArgumentException("not canonical");
        } catch (IllegalArgumentException e) {
            return new Check(false, "the signature is not base64: the receipt was altered");
        }
        byte[] data;
        try {
            data = Canonical.encode(body);
        } catch (IllegalArgumentException e) {
            return new Check(false, "the receipt holds a value the server never writes (" + e.getMessage() + "): it was altered");
        }
        if (!key.verify(data, s)) return new Check(false, "the signature does not match the content: the receipt was altered");
        return new Check(true, "signature valid (key " + key.keyId() + ")");
    }

    /**
     * Checks that the receipt's chain position is in the audit log in {@code auditDir}: the chain verifies through
     * that record, and the record is this run's.
     */
    @SuppressWarnings("unchecked")
    public static Check verifyAgainstLog(Map<String, Object> receipt, Path auditDir, ServerKey key) {
        if (!(receipt.get("audit") instanceof Map<?, ?> a)) return new Check(false, "the receipt has no audit chain position (it was issued with auditing off)");
        Map<String, Object> pos = (Map<String, Object>) a;
        String log = String.valueOf(pos.get("log"));
        long seq = ((Number) pos.get("seq")).longValue();
        String hash = String.valueOf(pos.get("hash"));
        Path file = log.startsWith("tenant:") ? AuditTrail.tenantLog(auditDir, log.substring("tenant:".length())) : AuditTrail.serverLog(auditDir);
        Map<String, Object>[] found = new Map[1];
        AuditVerifier.Report r = AuditVerifier.verify(file, key, rec -> {
            if (((Number) rec.get("seq")).longValue() == seq) found[0] = rec;
        });
        if (found[0] == null) {
            return new Check(false, "record " + seq + " of " + log + " is not in " + file + " as verified (" + r.status().name().toLowerCase()
                    + ": " + r.message() + ")");
        }
        if (!hash.equals(found[0].get("hash"))) return new Check(false, "record " + seq + " of " + log + " has another hash than the receipt states");
        if (!String.valueOf(receipt.get("run")).equals(String.valueOf(found[0].get("run")))) {
            return new Check(false, "record " + seq + " of " + log + " is not the record of run " + receipt.get("run"));
        }
        if (!r.intact()) return new Check(false, "record " + seq + " is in the chain, but the log is broken further on: " + r.message());
        return new Check(true, "record " + seq + " of " + log + " is in the chain (" + r.message() + ")");
    }
}
