package dev.berth.engine.audit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.berth.engine.audit.AuditVerifier.Status;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** Real log files, edited the way someone covering their tracks would, and what {@code verify} says about each. */
class AuditLogTest {
    @TempDir Path home;

    private AuditTrail trail() throws IOException {
        return AuditTrail.open(home, AuditTrail.OnFailure.REFUSE);
    }

    /** A log of tenant "t" with records 1..n (each a "note" with its number), closed. */
    private Path writeLog(int n) throws Exception {
        try (AuditTrail t = trail()) {
            for (int i = 1; i <= n; i++) t.record("t", "note", Map.of("n", i));
        }
        return AuditTrail.tenantLog(home.resolve("audit"), "t");
    }

    private ServerKey key() throws IOException {
        return ServerKey.loadOrCreate(home.resolve("keys"));
    }

    private static List<String> lines(Path f) throws IOException {
        return new ArrayList<>(Files.readAllLines(f));
    }

    private static void write(Path f, List<String> lines) throws IOException {
        Files.writeString(f, String.join("\n", lines) + "\n");
    }

    @Test
    void verify_untouchedLog_isIntact() throws Exception {
        Path f = writeLog(5);
        var r = AuditVerifier.verify(f, key());
        assertEquals(Status.OK, r.status(), r.message());
        assertEquals(5, r.lastSeq());
    }

    /** Each case: how the file is changed, the status, the record the report must name, and words of its message. */
    static Stream<Arguments> tampering() {
        return Stream.of(
                Arguments.of("edit a value", (UnaryOperator<List<String>>) l -> { l.set(3, l.get(3).replace("\"n\":3", "\"n\":4")); return l; },
                        3L, "record 3 (line 4) was edited: its hash does not match"),
                Arguments.of("re-space a record", (UnaryOperator<List<String>>) l -> { l.set(3, l.get(3).replace(",", ", ")); return l; },
                        3L, "record 3 (line 4) was edited: its bytes are not the canonical"),
                Arguments.of("break the JSON", (UnaryOperator<List<String>>) l -> { l.set(2, l.get(2).substring(5)); return l; },
                        2L, "line 3 (where record 2 should be) is not a valid record"),
                Arguments.of("delete a record", (UnaryOperator<List<String>>) l -> { l.remove(3); return l; },
                        3L, "line 4 holds record 4 where record 3 should be: records were deleted or reordered"),
                Arguments.of("swap two records", (UnaryOperator<List<String>>) l -> { String a = l.get(2); l.set(2, l.get(3)); l.set(3, a); return l; },
                        2L, "line 3 holds record 3 where record 2 should be"),
                Arguments.of("cut records off the end", (UnaryOperator<List<String>>) l -> l.subList(0, 4),
                        4L, "the log ends at record 3 but its signed head records 5 fsynced records: records 4..5 were cut off"),
                Arguments.of("add a record with a duplicate key", (UnaryOperator<List<String>>) l -> { l.set(1, l.get(1).replace("{", "{\"n\":9,")); return l; },
                        1L, "line 2 (where record 1 should be) is not a valid record"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("tampering")
    void verify_tamperedLog_namesFirstBrokenRecord(String name, UnaryOperator<List<String>> edit, long at, String says) throws Exception {
        Path f = writeLog(5);
        write(f, edit.apply(lines(f)));
        var r = AuditVerifier.verify(f, key());
        assertEquals(Status.BROKEN, r.status(), r.message());
        assertEquals(at, r.brokenAt(), r.message());
        assertTrue(r.message().contains(says), r.message());
    }

    @Test
    void verify_chainRewrittenWholesale_isCaughtByTheSignedHead() throws Exception {
        Path f = writeLog(4);
        // rewrite record 2 and re-chain everything after it, as someone without the server key could
        List<String> l = lines(f);
        String prev = Canonical.sha256(l.get(0).getBytes(StandardCharsets.UTF_8));
        for (int i = 1; i < l.size(); i++) {
            Map<String, Object> rec = Canonical.decodeObject(l.get(i).getBytes(StandardCharsets.UTF_8));
            rec.remove("hash");
            rec.put("prev", prev);
            if (i == 2) rec.put("n", 42);
            String h = Canonical.sha256(Canonical.encode(rec));
            rec.put("hash", h);
            l.set(i, new String(Canonical.encode(rec), StandardCharsets.UTF_8));
            prev = h;
        }
        write(f, l);
        var r = AuditVerifier.verify(f, key());
        assertEquals(Status.BROKEN, r.status(), r.message());
        assertTrue(r.message().contains("record 4 differs from the one the signed head names"), r.message());
    }

    @Test
    void verify_headEdited_isBroken() throws Exception {
        Path f = writeLog(3);
        Path head = AuditFormat.headOf(f);
        Files.writeString(head, Files.readString(head).replace("\"seq\":3", "\"seq\":2"));
        var r = AuditVerifier.verify(f, key());
        assertEquals(Status.BROKEN, r.status());
        assertTrue(r.message().contains("signature does not verify"), r.message());
    }

    @Test
    void verify_interruptedLastWrite_isIncompleteTailNotTampering_andReopenRecordsTheRecovery() throws Exception {
        Path f = writeLog(3);
        byte[] all = Files.readAllBytes(f);
        String extra = "{\"n\":4,\"prev\":\"ab";   // a record a crash cut short
        Files.write(f, (new String(all, StandardCharsets.UTF_8) + extra).getBytes(StandardCharsets.UTF_8));
        var r = AuditVerifier.verify(f, key());
        assertEquals(Status.INCOMPLETE_TAIL, r.status(), r.message());
        assertTrue(r.intact());
        assertEquals(3, r.lastSeq());
        assertTrue(r.message().contains("not tampering"), r.message());

        try (AuditTrail t = trail()) {
            t.record("t", "note", Map.of("n", 5));
        }
        var after = AuditVerifier.verify(f, key());
        assertEquals(Status.OK, after.status(), after.message());
        assertEquals(5, after.lastSeq());
        String recovered = lines(f).get(4);
        assertTrue(recovered.contains("\"type\":\"tail_recovered\"") && recovered.contains("\"dropped_bytes\":" + extra.length()), recovered);
    }

    @Test
    void open_logOfNewerFormatVersion_isRefusedByName() throws Exception {
        Path f = writeLog(1);
        List<String> l = lines(f);
        l.set(0, l.get(0).replace("\"version\":2", "\"version\":3"));
        write(f, l);
        var r = AuditVerifier.verify(f, key());
        assertEquals(Status.UNREADABLE, r.status());
        assertTrue(r.message().contains("newer Berth (audit format version 3; this one reads up to 2)"), r.message());
        try (AuditTrail t = trail()) {
            var e = assertThrows(AuditException.class, () -> t.record("t", "note", Map.of()));
            assertTrue(e.getMessage().contains("newer Berth"), e.getMessage());
        }
    }

    // --- preallocation (version 2): a zero-filled stretch ahead of the records, overwritten by them

    private static long contentLength(Path f) throws IOException {
        byte[] b = Files.readAllBytes(f);
        int end = b.length;
        while (end > 0 && b[end - 1] == 0) end--;
        return end;
    }

    @Test
    void open_log_isPreallocatedAhead_verifiesWhileOpen_andCleanCloseCutsTheZeros() throws Exception {
        Path f = AuditTrail.tenantLog(home.resolve("audit"), "t");
        try (AuditTrail t = trail()) {
            for (int i = 1; i <= 3; i++) t.record("t", "note", Map.of("n", i));
            assertTrue(Files.size(f) >= contentLength(f) + AuditLog.PREALLOC_CHUNK / 2,
                    "size " + Files.size(f) + ", content " + contentLength(f));
            var r = AuditVerifier.verify(f, key());
            assertEquals(Status.OK, r.status(), r.message());
            assertEquals(3, r.lastSeq());
        }
        assertEquals(contentLength(f), Files.size(f), "a clean close leaves no zero tail");
        assertEquals(Status.OK, AuditVerifier.verify(f, key()).status());
    }

    /** The files as a crash leaves them (zero tail in place): the next server continues the chain, nothing to recover. */
    @Test
    void reopen_afterCrashWithZeroTail_continuesTheChainWithoutRecovery() throws Exception {
        Path f = AuditTrail.tenantLog(home.resolve("audit"), "t");
        Path crashed = home.resolve("crashed");
        try (AuditTrail t = trail()) {
            for (int i = 1; i <= 3; i++) t.record("t", "note", Map.of("n", i));
            copyHome(crashed); // what is on disk at this moment, as kill -9 would leave it
        }
        Path g = AuditTrail.tenantLog(crashed.resolve("audit"), "t");
        assertTrue(Files.size(g) > contentLength(g), "the copy keeps the zero tail");
        try (AuditTrail t = AuditTrail.open(crashed, AuditTrail.OnFailure.REFUSE)) {
            t.record("t", "note", Map.of("n", 4));
        }
        var r = AuditVerifier.verify(g, ServerKey.loadOrCreate(crashed.resolve("keys")));
        assertEquals(Status.OK, r.status(), r.message());
        assertEquals(4, r.lastSeq());
        assertFalse(Files.readString(g).contains("tail_recovered"));
    }

    /**
     * A power loss can tear writes that were never fsynced into zeroed holes followed by data: past the signed head
     * that is a crash (incomplete, cut off at the next open); inside what the head covers it is damage.
     */
    @Test
    void zeroedHole_pastTheHeadIsACrash_withinItIsBroken() throws Exception {
        Path f = writeLog(3);
        Path head = AuditFormat.headOf(f);
        byte[] headAt3 = Files.readAllBytes(head);
        try (AuditTrail t = trail()) {
            t.record("t", "note", Map.of("n", 4));
            t.record("t", "note", Map.of("n", 5));
        }
        byte[] full = Files.readAllBytes(f);
        List<String> l = lines(f);
        int rec4 = full.length - l.get(5).length() - 1 - l.get(4).length() - 1;
        byte[] torn = java.util.Arrays.copyOf(full, full.length + 4096);
        java.util.Arrays.fill(torn, rec4 + 5, rec4 + 40, (byte) 0);  // a hole inside record 4, record 5 intact after it
        Files.write(f, torn);

        var inside = AuditVerifier.verify(f, key());                  // the head (seq 5) says record 4 was fsynced
        assertEquals(Status.BROKEN, inside.status(), inside.message());
        assertEquals(4, inside.brokenAt(), inside.message());

        Files.write(head, headAt3);                                  // the head as it was before records 4 and 5
        var past = AuditVerifier.verify(f, key());
        assertEquals(Status.INCOMPLETE_TAIL, past.status(), past.message());
        assertEquals(3, past.lastSeq());
        assertTrue(past.message().contains("power loss"), past.message());

        try (AuditTrail t = trail()) {
            t.record("t", "note", Map.of("n", 6));
        }
        var after = AuditVerifier.verify(f, key());
        assertEquals(Status.OK, after.status(), after.message());
        assertEquals(5, after.lastSeq());                            // 1-3, tail_recovered, the new note
        assertTrue(lines(f).get(4).contains("\"type\":\"tail_recovered\""), lines(f).get(4));
    }

    /** A log written before preallocation (version 1) keeps being appended to as before: no zeros, same chain. */
    @Test
    void versionOneLog_isAppendedWithoutPreallocation() throws Exception {
        Path f = AuditTrail.tenantLog(home.resolve("audit"), "t");
        Files.createDirectories(f.getParent());
        Map<String, Object> h = new java.util.LinkedHashMap<>();
        h.put("format", AuditLog.FORMAT);
        h.put("version", 1);
        h.put("log", "tenant:t");
        h.put("created", "2026-11-01T00:00:00Z");
        h.put("key_id", key().keyId());
        Files.write(f, (new String(Canonical.encode(h), StandardCharsets.UTF_8) + "\n").getBytes(StandardCharsets.UTF_8));
        try (AuditTrail t = trail()) {
            t.record("t", "note", Map.of("n", 1));
            t.record("t", "note", Map.of("n", 2));
            assertEquals(contentLength(f), Files.size(f), "no zero tail on a version 1 log");
        }
        var r = AuditVerifier.verify(f, key());
        assertEquals(Status.OK, r.status(), r.message());
        assertEquals(2, r.lastSeq());
    }

    @Test
    void verify_nulByteInAVersionOneLog_isBroken() throws Exception {
        Path f = AuditTrail.tenantLog(home.resolve("audit"), "t");
        versionOneLog_isAppendedWithoutPreallocation();
        byte[] b = Files.readAllBytes(f);
        b[b.length - 10] = 0;
        Files.write(f, b);
        var r = AuditVerifier.verify(f, key());
        assertEquals(Status.BROKEN, r.status(), r.message());
        assertTrue(r.message().contains("NUL byte"), r.message());
    }

    private void copyHome(Path to) throws IOException {
        try (Stream<Path> all = Files.walk(home)) {
            for (Path p : (Iterable<Path>) all::iterator) {
                if (p.startsWith(to)) continue;
                Path q = to.resolve(home.relativize(p).toString());
                if (Files.isDirectory(p)) Files.createDirectories(q);
                else Files.copy(p, q);
            }
        }
    }

    @Test
    void verify_headSignedByAnotherServer_isNamed() throws Exception {
        Path f = writeLog(2);
        ServerKey other = ServerKey.loadOrCreate(home.resolve("other-keys"));
        var r = AuditVerifier.verify(f, other);
        assertEquals(Status.BROKEN, r.status());
        assertTrue(r.message().contains("not this server's key " + other.keyId()), r.message());
    }

    @Test
    void record_fullDisk_refusesWithTheCause_andContinuePolicyProceeds() throws Exception {
        Path audit = home.resolve("audit");
        Files.createDirectories(audit);
        Files.createSymbolicLink(AuditTrail.tenantLog(audit, "full"), Path.of("/dev/full"));
        try (AuditTrail t = trail()) {
            var e = assertThrows(AuditException.class, () -> t.record("full", "note", Map.of()));
            assertTrue(e.getMessage().contains("No space left on device"), e.getMessage());
        }
        try (AuditTrail t = AuditTrail.open(home, AuditTrail.OnFailure.CONTINUE)) {
            assertEquals(null, t.record("full", "note", Map.of()));
        }
    }

    @Test
    void record_concurrentCallers_shareFsyncs_andChainStaysWhole() throws Exception {
        int threads = 8;
        int each = 50;
        try (AuditTrail t = trail()) {
            CountDownLatch go = new CountDownLatch(1);
            List<Thread> ts = new ArrayList<>();
            for (int i = 0; i < threads; i++) {
                int id = i;
                ts.add(Thread.ofPlatform().start(() -> {
                    try {
                        go.await();
                        for (int j = 0; j < each; j++) {
                            if (j % 3 == 0) t.recordLater("t", "egress", Map.of("thread", id, "j", j));
                            else t.record("t", "note", Map.of("thread", id, "j", j), j % 3 == 1 ? Durability.DURABLE : Durability.WRITTEN);
                        }
                    } catch (Exception e) {
                        throw new RuntimeException(e);
                    }
                }));
            }
            go.countDown();
            for (Thread x : ts) x.join();
        }
        var r = AuditVerifier.verify(AuditTrail.tenantLog(home.resolve("audit"), "t"), key());
        assertEquals(Status.OK, r.status(), r.message());
        assertEquals(threads * each, r.lastSeq());
    }

    @Test
    void tenants_haveSeparateFiles_andEgressGoesToTheOwnersLog() throws Exception {
        try (AuditTrail t = trail()) {
            t.bindWorkspace("ws-a", "alice");
            t.record("bob", "note", Map.of());
            t.egressSink().record(new dev.berth.proxy.audit.AuditRecord("decision", java.time.Instant.now(), "ws-a", "run-1", "c1",
                    "connect", "CONNECT", "example.com", 443, null, "deny", "not in the allowlist", 0, 0, 0, null));
        }
        Path dir = home.resolve("audit");
        String alice = Files.readString(AuditTrail.tenantLog(dir, "alice"));
        String bob = Files.readString(AuditTrail.tenantLog(dir, "bob"));
        assertTrue(alice.contains("example.com"));
        assertFalse(bob.contains("example.com"));
        assertNotNull(AuditVerifier.verify(AuditTrail.tenantLog(dir, "alice"), key()));
    }

    /** MCP cancellation interrupts the handler's thread; a FileChannel closes itself on an interrupt. */
    @Test
    void record_fromAnInterruptedThread_isWritten_andTheLogStaysUsable() throws Exception {
        try (AuditTrail t = trail()) {
            t.record("t", "note", Map.of("n", 1));
            Thread.currentThread().interrupt();
            t.record("t", "note", Map.of("n", 2));
            assertTrue(Thread.interrupted(), "the interrupt is kept for the caller");
            t.record("t", "note", Map.of("n", 3));
        }
        var r = AuditVerifier.verify(AuditTrail.tenantLog(home.resolve("audit"), "t"), key());
        assertEquals(Status.OK, r.status(), r.message());
        assertEquals(3, r.lastSeq());
    }

    @Test
    void key_readableByOthers_isRefused() throws Exception {
        ServerKey.loadOrCreate(home.resolve("keys"));
        Path priv = home.resolve("keys").resolve(ServerKey.PRIVATE_FILE);
        assertEquals("rw-------", java.nio.file.attribute.PosixFilePermissions.toString(Files.getPosixFilePermissions(priv)));
        Files.setPosixFilePermissions(priv, java.nio.file.attribute.PosixFilePermissions.fromString("rw-r--r--"));
        var e = assertThrows(IOException.class, () -> ServerKey.loadOrCreate(home.resolve("keys")));
        assertTrue(e.getMessage().contains("readable by others"), e.getMessage());
    }
}
