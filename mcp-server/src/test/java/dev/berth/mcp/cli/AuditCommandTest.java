package dev.berth.mcp.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.berth.engine.audit.AuditTrail;
import dev.berth.engine.audit.Canonical;
import dev.berth.engine.audit.Receipts;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code berth audit} against real log files in a real home. */
class AuditCommandTest {
    @TempDir Path home;
    private Map<String, Object> receipt;

    @BeforeEach
    void logs() throws Exception {
        try (AuditTrail t = AuditTrail.open(home, AuditTrail.OnFailure.REFUSE)) {
            t.record("alice", "tool_call", Map.of("tool", "run"));
            var pos = t.record("alice", "run", Map.of("run", "run-1", "exit_code", 0));
            t.record("bob", "tool_call", Map.of("tool", "list_workspaces"));
            receipt = Receipts.sign(Map.of("run", "run-1", "audit", pos.toJson()), t.key());
        }
    }

    private record Out(int code, String out, String err) {}

    private Out audit(String... args) throws Exception {
        var o = new ByteArrayOutputStream();
        var e = new ByteArrayOutputStream();
        List<String> argv = new ArrayList<>(List.of("audit"));
        argv.addAll(List.of(args));
        argv.addAll(List.of("--home", home.toString()));
        int code = Cli.run(argv.toArray(String[]::new), null, new PrintStream(o, true, StandardCharsets.UTF_8), new PrintStream(e, true, StandardCharsets.UTF_8));
        return new Out(code, o.toString(StandardCharsets.UTF_8), e.toString(StandardCharsets.UTF_8));
    }

    @Test
    void verify_intactLogs_exit0_andBrokenOne_namesTheRecord() throws Exception {
        Out ok = audit("verify");
        assertEquals(0, ok.code(), ok.out());
        assertTrue(ok.out().contains("tenant:alice") && ok.out().contains("tenant:bob"), ok.out());

        Path alice = AuditTrail.tenantLog(home.resolve("audit"), "alice");
        List<String> lines = new ArrayList<>(Files.readAllLines(alice));
        lines.remove(1);
        Files.writeString(alice, String.join("\n", lines) + "\n");
        Out bad = audit("verify", "--tenant", "alice");
        assertEquals(1, bad.code());
        assertTrue(bad.out().contains("BROKEN") && bad.out().contains("line 2 holds record 2 where record 1 should be"), bad.out());
    }

    @Test
    void export_writesVerifiedRecordsAsJsonLines_filteredByType() throws Exception {
        Path out = home.resolve("alice.jsonl");
        Out r = audit("export", "--tenant", "alice", "--since", "1d", "--type", "run", "--out", out.toString());
        assertEquals(0, r.code(), r.err());
        List<String> lines = Files.readAllLines(out);
        assertEquals(1, lines.size());
        Map<String, Object> rec = Canonical.decodeObject(lines.get(0).getBytes(StandardCharsets.UTF_8));
        assertEquals("run-1", rec.get("run"));
        assertEquals("tenant:alice", rec.get("log"));
    }

    @Test
    void receipt_valid_thenOneByteChanged_thenAnotherServersKey() throws Exception {
        Path f = home.resolve("receipt.json");
        Files.write(f, Canonical.encode(Map.of("exit_code", 0, "receipt", receipt)));
        Out ok = audit("receipt", f.toString());
        assertEquals(0, ok.code(), ok.out());
        assertTrue(ok.out().contains("signature: valid") && ok.out().contains("chain: valid"), ok.out());

        Files.writeString(f, Files.readString(f).replace("run-1", "run-2"));
        Out bad = audit("receipt", f.toString());
        assertEquals(1, bad.code());
        assertTrue(bad.out().contains("signature: INVALID"), bad.out());

        Path other = home.resolve("other");
        try (AuditTrail t = AuditTrail.open(other, AuditTrail.OnFailure.REFUSE)) {
            Files.write(f, Canonical.encode(Receipts.sign(Map.of("run", "run-9"), t.key())));
        }
        Out foreign = audit("receipt", f.toString());
        assertEquals(1, foreign.code());
        assertTrue(foreign.out().contains("comes from another server"), foreign.out());
    }

    @Test
    void badSince_namesTheValue() {
        var e = org.junit.jupiter.api.Assertions.assertThrows(UsageException.class, () -> AuditCommand.since("yesterday"));
        assertTrue(e.getMessage().contains("got 'yesterday'"));
    }
}
