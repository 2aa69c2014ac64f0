package dev.berth.engine.audit;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Arrays;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The audit log's encodings (header line, chained record, signed head) and where a log's head file lives, as
 * {@link AuditLog} describes them; shared by the writer and the verifier. Stateless.
 */
final class AuditFormat {
    private AuditFormat() {}

    /** A record ready to write: its hash (the next record's {@code prev}) and its line, newline included. */
    record Encoded(String hash, byte[] line) {}

    /** The head file beside {@code file}: {@code name.log} has {@code name.head}. */
    static Path headOf(Path file) {
        String n = file.getFileName().toString();
        return file.resolveSibling((n.endsWith(".log") ? n.substring(0, n.length() - 4) : n) + ".head");
    }

    /** The header line of a new log, without its newline; the first record's {@code prev} is its SHA-256. */
    static byte[] header(String name, String keyId) {
        Map<String, Object> h = new LinkedHashMap<>();
        h.put("format", AuditLog.FORMAT);
        h.put("version", AuditLog.VERSION);
        h.put("log", name);
        h.put("created", Instant.now().toString());
        h.put("key_id", keyId);
        return Canonical.encode(h);
    }

    /** Refuses a header that is not ours or is from a newer format. */
    static Map<String, Object> checkHeader(byte[] header, Path file) throws AuditException {
        Map<String, Object> h;
        try {
            h = Canonical.decodeObject(header);
        } catch (IllegalArgumentException e) {
            throw new AuditException(file + " does not start with a Berth audit header: " + e.getMessage());
        }
        if (!AuditLog.FORMAT.equals(h.get("format"))) throw new AuditException(file + " is not a Berth audit log (format " + h.get("format") + ")");
        if (!(h.get("version") instanceof Number v)) throw new AuditException(file + " has no format version in its header");
        if (v.intValue() > AuditLog.VERSION) {
            throw new AuditException(file + " was written by a newer Berth (audit format version " + v + "; this one reads up to "
                    + AuditLog.VERSION + "); use that version, and do not append to it with this one");
        }
        if (v.intValue() < 1) throw new AuditException(file + " has audit format version " + v + ", which never existed");
        return h;
    }

    /**
     * Encodes record {@code seq} chained to {@code prev}, stamped now.
     *
     * @throws IllegalArgumentException if {@code fields} uses a reserved key or the record exceeds
     *                                  {@link AuditLog#MAX_RECORD}
     */
    static Encoded record(String type, Map<String, Object> fields, long seq, String prev) {
        Map<String, Object> rec = new TreeMap<>(fields);
        for (String k : List.of("seq", "time", "type", "prev", "hash")) {
            if (rec.containsKey(k)) throw new IllegalArgumentException("audit field '" + k + "' is reserved");
        }
        rec.put("seq", seq);
        rec.put("time", Instant.now().toString());
        rec.put("type", type);
        rec.put("prev", prev);
        String hash = Canonical.sha256(Canonical.encode(rec));
        rec.put("hash", hash);
        byte[] body = Canonical.encode(rec);
        if (body.length > AuditLog.MAX_RECORD) throw new IllegalArgumentException("audit record of " + body.length + " bytes exceeds " + AuditLog.MAX_RECORD);
        byte[] line = Arrays.copyOf(body, body.length + 1);
        line[body.length] = '\n';
        return new Encoded(hash, line);
    }

    /** The signed head for record {@code seq}, padded to {@link AuditLog#HEAD_SIZE} bytes, ready to write. */
    static ByteBuffer head(String name, long seq, String hash, ServerKey key) {
        Map<String, Object> h = new LinkedHashMap<>();
        h.put("log", name);
        h.put("seq", seq);
        h.put("hash", hash);
        h.put("key_id", key.keyId());
        byte[] signed = Canonical.encode(h);
        h.put("sig", Base64.getEncoder().encodeToString(key.sign(signed)));
        byte[] body = Canonical.encode(h);
        ByteBuffer b = ByteBuffer.allocate(AuditLog.HEAD_SIZE);
        b.put(body);
        while (b.position() < AuditLog.HEAD_SIZE - 1) b.put((byte) ' ');
        b.put((byte) '\n').flip();
        return b;
    }

    static int indexOf(byte[] a, byte v, int from) {
        for (int i = from; i < a.length; i++) if (a[i] == v) return i;
        return -1;
    }

    static int lastIndexOf(byte[] a, byte v, int from) {
        for (int i = from; i >= 0; i--) if (a[i] == v) return i;
        return -1;
    }
}
