package dev.berth.engine.audit;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Consumer;

/**
 * Checks an audit log from its header to its end and names the first broken link. Stateless and thread-safe.
 *
 * <p>What each finding means: a record whose bytes are not the canonical encoding of their own content, or whose
 * {@code hash} does not match it, was <em>edited</em>; a {@code seq} out of order means records were
 * <em>deleted or reordered</em>; a {@code prev} that is not the previous record's hash means the record before it
 * was replaced; a log that ends before the seq its signed head names was <em>truncated</em>; a head whose hash
 * differs from the chain at that seq means the chain was rewritten. A last line without its newline is a write a
 * crash interrupted, not tampering: the log verifies up to the record before it (the server cuts such a tail off,
 * and records that it did, when it next opens the log). A version 2 log may end in zeros (its preallocated stretch):
 * the first NUL byte ends the records, and every byte after it must be zero. A zeroed hole followed by data is a
 * power loss tearing writes that were never fsynced when it lies past the signed head's record, and damage (or
 * tampering) when it lies within what the head says was fsynced.
 */
public final class AuditVerifier {
    private AuditVerifier() {}

    public enum Status {
        /** Every record chains and the signed head (if any) agrees. */
        OK,
        /** Every complete record chains; the last line is an incomplete write (crash), not tampering. */
        INCOMPLETE_TAIL,
        /** Tampering (or corruption): {@code message} names the first broken record. */
        BROKEN,
        /** Not a log this version can check (a newer format version, or not an audit log at all). */
        UNREADABLE
    }

    /**
     * @param records  complete, verified records
     * @param lastSeq  seq of the last verified record (0: header only)
     * @param brokenAt seq the break was found at (or would have been), 0 when none
     * @param line     line number (1 = header) of the break, 0 when none
     */
    public record Report(String log, Path file, Status status, long records, long lastSeq, String lastHash,
                         long brokenAt, long line, String message) {
        public boolean intact() { return status == Status.OK || status == Status.INCOMPLETE_TAIL; }
    }

    /** Verifies {@code file}; {@code key} checks the head's signature (null: the head is read but its signature not checked). */
    public static Report verify(Path file, ServerKey key) {
        return verify(file, key, r -> { });
    }

    /**
     * Verifies and hands each verified record to {@code sink} in order (what {@code berth audit export} writes); a
     * record is handed over only once it has checked out.
     */
    public static Report verify(Path file, ServerKey key, Consumer<Map<String, Object>> sink) {
        String log = file.getFileName().toString();
        try (InputStream in = new BufferedInputStream(Files.newInputStream(file), 1 << 16)) {
            byte[] header = readLine(in);
            if (header == null || header.length == 0 || header[header.length - 1] != '\n') {
                return new Report(log, file, Status.UNREADABLE, 0, 0, null, 0, 1, file + " has no complete header line");
            }
            header = Arrays.copyOf(header, header.length - 1);
            Map<String, Object> h;
            try {
                h = AuditFormat.checkHeader(header, file);
            } catch (AuditException e) {
                return new Report(log, file, Status.UNREADABLE, 0, 0, null, 0, 1, e.getMessage());
            }
            log = String.valueOf(h.get("log"));
            boolean zeroTail = ((Number) h.get("version")).intValue() >= AuditLog.PREALLOC_VERSION;
            String prev = Canonical.sha256(header);
            long seq = 0;
            long lineNo = 1;
            Map<Long, String> hashes = new java.util.HashMap<>(); // seq -> hash, to check the head against the chain
            Head head = readHead(AuditFormat.headOf(file));
            byte[] line;
            while ((line = readLine(in)) != null) {
                lineNo++;
                if (line[line.length - 1] == 0) {
                    Report r = zeros(log, file, zeroTail, line.length - 1, allZero(in), head, seq, prev, lineNo);
                    return r.status() == Status.BROKEN ? r : checkHead(r, head, key, hashes);
                }
                if (line[line.length - 1] != '\n') {
                    String msg = "the last line (" + line.length + " bytes after record " + seq + ") is an incomplete write, as a"
                            + " crash leaves it, not tampering; the chain verifies up to record " + seq;
                    Report r = new Report(log, file, Status.INCOMPLETE_TAIL, seq, seq, prev, seq + 1, lineNo, msg);
                    return checkHead(r, head, key, hashes);
                }
                byte[] body = Arrays.copyOf(line, line.length - 1);
                long expect = seq + 1;
                Map<String, Object> rec;
                try {
                    rec = Canonical.decodeObject(body);
                } catch (IllegalArgumentException e) {
                    return broken(log, file, seq, prev, expect, lineNo, "line " + lineNo + " (where record " + expect
                            + " should be) is not a valid record (" + e.getMessage() + "): it was edited or damaged");
                }
                Object s = rec.get("seq");
                String what = "record " + s + " (line " + lineNo + ")";
                byte[] again;
                try {
                    again = Canonical.encode(rec);
                } catch (IllegalArgumentException e) {
                    return broken(log, file, seq, prev, expect, lineNo, what + " was edited: " + e.getMessage());
                }
                if (!Arrays.equals(again, body)) {
                    return broken(log, file, seq, prev, expect, lineNo, what + " was edited: its bytes are not the canonical"
                            + " encoding the server writes");
                }
                Object hash = rec.remove("hash");
                if (!(hash instanceof String hs) || !hs.equals(Canonical.sha256(Canonical.encode(rec)))) {
                    return broken(log, file, seq, prev, expect, lineNo, what + " was edited: its hash does not match its content");
                }
                if (!(s instanceof Number n) || n.longValue() != expect) {
                    return broken(log, file, seq, prev, expect, lineNo, "line " + lineNo + " holds record " + s + " where record "
                            + expect + " should be: records were deleted or reordered"
                            + (s instanceof Number n2 && n2.longValue() < expect ? "" : " (record " + expect + " is missing)"));
                }
                if (!prev.equals(rec.get("prev"))) {
                    return broken(log, file, seq, prev, expect, lineNo, what + " does not chain to record " + seq
                            + ": record " + seq + " was replaced, or records between them were removed and renumbered");
                }
                rec.put("hash", hs);
                sink.accept(rec);
                seq = expect;
                prev = hs;
                if (head != null && head.seq == seq) hashes.put(seq, hs);
            }
            return checkHead(new Report(log, file, Status.OK, seq, seq, prev, 0, 0, "intact: " + seq + " record(s)"), head, key, hashes);
        } catch (NoSuchFileException e) {
            return new Report(log, file, Status.UNREADABLE, 0, 0, null, 0, 0, file + " does not exist");
        } catch (IOException e) {
            return new Report(log, file, Status.UNREADABLE, 0, 0, null, 0, 0, "cannot read " + file + ": " + e);
        }
    }

    /** The records ended at a NUL byte, {@code before} bytes into line {@code lineNo}. */
    private static Report zeros(String log, Path file, boolean zeroTail, int before, boolean restZero, Head head, long seq,
                                String prev, long lineNo) {
        if (!zeroTail) {
            return broken(log, file, seq, prev, seq + 1, lineNo, "line " + lineNo + " (where record " + (seq + 1)
                    + " should be) holds a NUL byte, which a version 1 log never has: it was edited or damaged");
        }
        if (restZero && before == 0) {
            return new Report(log, file, Status.OK, seq, seq, prev, 0, 0, "intact: " + seq + " record(s)");
        }
        boolean unsynced = head == null || head.problem != null || seq >= head.seq;
        String what = restZero
                ? "the last line (" + before + " bytes after record " + seq + ") is an incomplete write, as a crash leaves it"
                : "a zeroed stretch follows record " + seq + " with data after it";
        if (restZero || unsynced) {
            return new Report(log, file, Status.INCOMPLETE_TAIL, seq, seq, prev, seq + 1, lineNo, what
                    + (restZero ? "" : ", past the last record the signed head says was fsynced: writes a power loss tore")
                    + ", not tampering; the chain verifies up to record " + seq);
        }
        return broken(log, file, seq, prev, seq + 1, lineNo, what + " within the records the signed head says were fsynced ("
                + head.seq + "): they were overwritten or damaged");
    }

    private static boolean allZero(InputStream in) throws IOException {
        byte[] b = new byte[1 << 16];
        for (int n; (n = in.read(b)) > 0; ) {
            for (int i = 0; i < n; i++) if (b[i] != 0) return false;
        }
        return true;
    }

    private static Report broken(String log, Path file, long seq, String prev, long at, long line, String message) {
        return new Report(log, file, Status.BROKEN, seq, seq, prev, at, line, message
                + "; the chain verifies up to record " + seq);
    }

    private record Head(long seq, String hash, String keyId, byte[] signed, byte[] sig, String problem) {}

    private static Head readHead(Path headFile) throws IOException {
        if (!Files.exists(headFile)) return null;
        byte[] b = Files.readAllBytes(headFile);
        String text = new String(b, StandardCharsets.UTF_8).strip();
        if (text.isEmpty()) return null; // created, never written: the log was never fsynced past its header
        try {
            Map<String, Object> m = Canonical.decodeObject(text.getBytes(StandardCharsets.UTF_8));
            Object sig = m.remove("sig");
            return new Head(((Number) m.get("seq")).longValue(), (String) m.get("hash"), (String) m.get("key_id"),
                    Canonical.encode(m), Base64.getDecoder().decode((String) sig), null);
        } catch (RuntimeException e) {
            return new Head(0, null, null, null, null, "the head file " + headFile + " is unreadable (" + e.getMessage() + ")");
        }
    }

    private static Report checkHead(Report r, Head head, ServerKey key, Map<Long, String> hashes) {
        if (head == null) return r;
        if (head.problem != null) return withBreak(r, 0, head.problem + ": it was edited");
        if (key != null && !key.keyId().equals(head.keyId)) {
            return withBreak(r, 0, "the head is signed by key " + head.keyId + ", not this server's key " + key.keyId());
        }
        if (key != null && !key.verify(head.signed, head.sig)) {
            return withBreak(r, 0, "the head's signature does not verify: the head file was edited");
        }
        if (head.seq > r.lastSeq()) {
            return withBreak(r, r.lastSeq() + 1, "the log ends at record " + r.lastSeq() + " but its signed head records "
                    + head.seq + " fsynced records: records " + (r.lastSeq() + 1) + ".." + head.seq + " were cut off (truncated)");
        }
        String atHead = hashes.get(head.seq);
        if (head.seq > 0 && atHead != null && !atHead.equals(head.hash)) {
            return withBreak(r, head.seq, "record " + head.seq + " differs from the one the signed head names: the chain"
                    + " up to it was rewritten");
        }
        return r;
    }

    private static Report withBreak(Report r, long at, String message) {
        return new Report(r.log(), r.file(), Status.BROKEN, r.records(), r.lastSeq(), r.lastHash(), at, r.line(), message);
    }

    /**
     * One line including its '\n', or up to and including its first NUL byte, or the bytes before EOF without
     * either; null at EOF. Lines are capped.
     */
    private static byte[] readLine(InputStream in) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream(512);
        int c;
        while ((c = in.read()) >= 0) {
            out.write(c);
            if (c == '\n' || c == 0) return out.toByteArray();
            if (out.size() > AuditLog.MAX_RECORD + 2) {
                // keep reading to the end of this line: the caller reports it as not a valid record
                while ((c = in.read()) >= 0 && c != '\n') { }
                byte[] cut = Arrays.copyOf(out.toByteArray(), 16);
                return c == '\n' ? concat(cut, new byte[] {'\n'}) : cut;
            }
        }
        return out.size() == 0 ? null : out.toByteArray();
    }

    private static byte[] concat(byte[] a, byte[] b) {
        byte[] r = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, r, a.length, b.length);
        return r;
    }

    /** A report as a JSON-ready map (the CLI prints these). */
    public static Map<String, Object> toJson(Report r) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("log", r.log());
        m.put("file", r.file().toString());
        m.put("status", r.status().name().toLowerCase(java.util.Locale.ROOT));
        m.put("records", r.records());
        m.put("last_seq", r.lastSeq());
        if (r.brokenAt() > 0) m.put("broken_at", r.brokenAt());
        if (r.line() > 0) m.put("line", r.line());
        m.put("message", r.message());
        return m;
    }
}
