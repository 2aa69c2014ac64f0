package dev.berth.engine.audit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.berth.engine.Await;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A writer process killed with SIGKILL while appending: the chain it leaves verifies up to its last complete record. */
class AuditCrashTest {
    @TempDir Path home;

    /** The child: appends forever from 4 threads, mixing queued, written and durable records. */
    public static void main(String[] args) throws Exception {
        AuditTrail t = AuditTrail.open(Path.of(args[0]), AuditTrail.OnFailure.REFUSE);
        for (int i = 0; i < 4; i++) {
            int id = i;
            Thread.ofPlatform().start(() -> {
                for (long j = 0; ; j++) {
                    try {
                        Durability d = Durability.values()[(int) (j % 3)];
                        if (d == Durability.QUEUED) t.recordLater("t", "egress", Map.of("thread", id, "j", j, "pad", "x".repeat((int) (j % 700))));
                        else t.record("t", "note", Map.of("thread", id, "j", j, "pad", "y".repeat((int) (j % 900))), d);
                    } catch (AuditException e) {
                        throw new RuntimeException(e);
                    }
                }
            });
        }
        Thread.sleep(Long.MAX_VALUE); // the writers go on until the test kills this process mid-write: nothing to await
    }

    @Test
    void kill9_midWrite_leavesAChainThatVerifiesToItsLastCompleteRecord() throws Exception {
        String javaBin = ProcessHandle.current().info().command().orElse("java");
        Process p = new ProcessBuilder(javaBin, "-cp", System.getProperty("java.class.path"), AuditCrashTest.class.getName(), home.toString())
                .redirectErrorStream(true).redirectOutput(home.resolve("child.out").toFile()).start();
        Path log = AuditTrail.tenantLog(home.resolve("audit"), "t");
        Path head = AuditFormat.headOf(log);
        // polling the real files: the child announces nothing
        Await.until("the writer has fsynced at least 500 records", Duration.ofSeconds(60), () -> {
            assertTrue(p.isAlive(), "the writer died: " + (Files.exists(home.resolve("child.out")) ? Files.readString(home.resolve("child.out")) : ""));
            return headSeq(head) >= 500;
        });
        p.destroyForcibly(); // SIGKILL
        p.waitFor();
        ServerKey key = ServerKey.loadOrCreate(home.resolve("keys"));
        var r = AuditVerifier.verify(log, key);
        assertTrue(r.intact(), r.status() + ": " + r.message());
        assertTrue(r.lastSeq() >= headSeq(head), "verified " + r.lastSeq() + " < head " + headSeq(head));

        // a torn write of a record not yet fsynced (what a power cut can leave; kill -9 cannot split one write),
        // written where the next record goes: over the zero-filled preallocated stretch
        byte[] all = Files.readAllBytes(log);
        int end = all.length;
        while (end > 0 && all[end - 1] == 0) end--;
        assertTrue(all.length > end, "a killed writer leaves its preallocated zero tail");
        int lineStart = end - 1;
        while (all[lineStart - 1] != '\n') lineStart--;
        try (var ch = java.nio.channels.FileChannel.open(log, java.nio.file.StandardOpenOption.WRITE)) {
            ch.write(java.nio.ByteBuffer.wrap(all, lineStart, (end - lineStart) / 2), end);
        }
        var torn = AuditVerifier.verify(log, key);
        assertEquals(AuditVerifier.Status.INCOMPLETE_TAIL, torn.status(), torn.message());
        assertEquals(r.lastSeq(), torn.lastSeq());
    }

    private static long headSeq(Path head) throws Exception {
        if (!Files.exists(head)) return 0;
        String s = Files.readString(head).strip();
        if (s.isEmpty()) return 0;
        return ((Number) Canonical.decodeObject(s.getBytes()).get("seq")).longValue();
    }
}
