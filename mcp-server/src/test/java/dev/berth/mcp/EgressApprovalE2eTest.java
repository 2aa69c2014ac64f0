package dev.berth.mcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpsServer;
import dev.berth.engine.Await;
import dev.berth.engine.TestPki;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import tools.jackson.databind.JsonNode;

/**
 * Issue 16, human approval over MCP, with real parts: an HTTPS server on loopback (certified for localhost by a test
 * CA), two Berth stdio servers on the namespace driver whose operator config allows nothing but marks localhost on
 * the server's port approvable (grants of 20 s or 1 h, 3 s to answer), and the official TypeScript client, once
 * declaring elicitation (its handler answers as each test says) and once not. Inside the workspace the real curl goes
 * through the egress proxy: refused before a grant, let through after the user accepted, refused again after the
 * grant expired (waited for, not slept), and every step is in the tenant's audit log.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class EgressApprovalE2eTest {
    static final String CURL = "env -u NO_PROXY -u no_proxy curl -sS --max-time 20 --cacert /workspace/ca.pem ";

    Path dir;
    HttpsServer upstream;
    int port;
    String caPem;
    Path home;
    McpBridge asking;   // declares elicitation
    McpBridge plain;    // does not

    @BeforeAll
    void start() throws Exception {
        dir = Files.createTempDirectory("berth-approval-e2e-");
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx--x--x"));
        TestPki pki = TestPki.create();
        upstream = pki.https(ex -> "hello from " + ex.getRequestURI().getPath(), "localhost");
        port = upstream.getAddress().getPort();
        caPem = pki.caPem();
        String config = """
                {"egress": {
                   "allow": [],
                   "approval": {"hosts": [{"host": "localhost", "ports": [%d]}], "durationsS": [20, 3600], "timeoutS": 3},
                   "unsafe": {"unsafeAllowLoopbackUpstreams": true}}}
                """.formatted(port);
        Path cfg = dir.resolve("berth.json");
        Files.writeString(cfg, config);
        home = Files.createDirectories(dir.resolve("home"));
        asking = McpBridge.stdio(home, "--isolation", "namespace", "--config", cfg.toString());
        asking.connectWithElicitation();
        plain = McpBridge.stdio(Files.createDirectories(dir.resolve("home2")), "--isolation", "namespace", "--config", cfg.toString());
        plain.connect();
    }

    @AfterAll
    void stop() throws IOException {
        if (asking != null) asking.close();
        if (plain != null) plain.close();
        if (upstream != null) upstream.stop(0);
        HomeLeaks.assertNone(dir); // a leak is named here, before the delete
        dev.berth.engine.spi.Trees.delete(dir);
    }

    static JsonNode ok(McpBridge mcp, String tool, Map<String, Object> args) throws IOException {
        JsonNode sc = mcp.ok(tool, args);
        SchemaCheck.assertValid(tool, sc);
        return sc;
    }

    String workspace(McpBridge mcp) throws IOException {
        String ws = ok(mcp, "open_workspace", Map.of()).path("workspace").asString();
        ok(mcp, "write_file", Map.of("workspace", ws, "path", "ca.pem", "content", caPem));
        if (mcp == asking) asking.elicitations();  // forget questions of earlier tests
        return ws;
    }

    JsonNode curl(McpBridge mcp, String ws, String path) throws IOException {
        return ok(mcp, "run", Map.of("workspace", ws, "command", CURL + "https://localhost:" + port + path));
    }

    JsonNode request(McpBridge mcp, String ws, String why) throws IOException {
        return ok(mcp, "request_egress", Map.of("workspace", ws, "host", "localhost", "port", port, "reason", why));
    }

    Map<String, Object> accept(String duration) {
        return Map.of("action", "accept", "content", Map.of("duration", duration));
    }

    static void await(String what, BooleanSupplier condition) throws Exception {
        Await.until(what, Duration.ofSeconds(120), condition::getAsBoolean);
    }

    String audit() {
        try {
            return Files.readString(home.resolve("audit/tenant.local.log"));
        } catch (IOException e) {
            return "";
        }
    }

    @Test
    void acceptedRequest_letsCurlThrough_untilTheGrantExpires() throws Exception {
        String ws = workspace(asking);
        asking.elicitAnswer(Map.of("action", "decline"));
        JsonNode before = curl(asking, ws, "/before");
        assertTrue(before.path("exit_code").asInt() != 0, before.toString());
        asking.elicitations();  // the run's own question (declined by default) is checked in another test

        asking.elicitAnswer(accept("20 s"));
        JsonNode g = request(asking, ws, "the build downloads its fixtures from localhost");
        assertEquals("granted", g.path("outcome").asString(), g.toString());
        assertTrue(g.path("granted").asBoolean());
        assertEquals(20, g.path("duration_s").asInt());
        assertEquals("localhost", g.path("host").asString());
        Instant expires = Instant.parse(g.path("expires_at").asString());
        JsonNode asked = asking.elicitations();
        assertEquals(1, asked.size(), asked.toString());
        String message = asked.get(0).path("message").asString();
        assertTrue(message.startsWith("Allow localhost:" + port + " for workspace " + ws + " for 20 s?"), message);
        assertTrue(message.contains("the build downloads its fixtures from localhost"), message);
        assertEquals("[\"20 s\",\"1 h\"]", asked.get(0).path("requestedSchema").path("properties").path("duration").path("enum").toString());

        JsonNode during = curl(asking, ws, "/during");
        assertEquals("hello from /during", during.path("stdout").asString(), during.toString());
        assertEquals(0, during.path("egress_denied").size(), during.toString());

        // asking again while the grant is live does not bother the user
        JsonNode again = request(asking, ws, "again");
        assertEquals("already_granted", again.path("outcome").asString(), again.toString());
        assertEquals(0, asking.elicitations().size());

        // another workspace of the same tenant does not get it
        String other = workspace(asking);
        asking.elicitAnswer(Map.of("action", "decline"));
        JsonNode elsewhere = curl(asking, other, "/elsewhere");
        assertTrue(elsewhere.path("exit_code").asInt() != 0, elsewhere.toString());
        asking.elicitations();

        // after expiry (the cache's scheduler ends it on time), the same curl is refused again
        await("the grant's expiry in the audit log", () -> audit().contains("approval grant " + g.path("grant_id").asString() + " for localhost:" + port + " expired"));
        JsonNode after = curl(asking, ws, "/after");
        assertTrue(Instant.now().isAfter(expires));
        assertTrue(after.path("exit_code").asInt() != 0, after.toString());
        assertTrue(after.path("egress_denied").get(0).path("reason").asString().contains("is approvable"), after.toString());
        String log = audit();
        assertTrue(log.contains("egress_approval_requested"), log);
        assertTrue(log.contains("egress_approval_granted"), log);
        assertTrue(log.contains("egress_approval_expired"), log);
        assertTrue(log.contains("allowed by approval grant " + g.path("grant_id").asString()), log);
    }

    @Test
    void deniedRun_asksTheUser_andItsDenialSaysWhatTheUserAnswered() throws Exception {
        String ws = workspace(asking);
        asking.elicitAnswer(Map.of("action", "decline"));
        JsonNode r = curl(asking, ws, "/declined");
        assertTrue(r.path("exit_code").asInt() != 0, r.toString());
        String reason = r.path("egress_denied").get(0).path("reason").asString();
        assertTrue(reason.contains("matches no allowlist entry"), reason);
        assertTrue(reason.contains("approval was asked over MCP elicitation: the user declined; nothing was granted"), reason);
        JsonNode asked = asking.elicitations();
        assertEquals(1, asked.size(), asked.toString());
        assertTrue(asked.get(0).path("message").asString().contains("a run was refused localhost:" + port), asked.toString());

        asking.elicitAnswer(accept("1 h"));
        JsonNode granted = curl(asking, ws, "/first");
        String grantedReason = granted.path("egress_denied").get(0).path("reason").asString();
        assertTrue(grantedReason.contains("approval was asked over MCP elicitation: the user granted localhost:" + port
                + " to workspace " + ws + " for 1 h"), grantedReason);
        assertTrue(grantedReason.contains("run the command again"), grantedReason);
        JsonNode retry = curl(asking, ws, "/retry");
        assertEquals("hello from /retry", retry.path("stdout").asString(), retry.toString());

        // the grant ends when the workspace closes
        ok(asking, "close_workspace", Map.of("workspace", ws));
        await("the grant's end in the audit log", () -> audit().contains("ended: workspace " + ws + " closed"));
    }

    @Test
    void cancelTimeoutErrorAndMalformedAnswers_grantNothing() throws Exception {
        String ws = workspace(asking);
        Map<Map<String, Object>, String> answers = new java.util.LinkedHashMap<>();
        answers.put(Map.of("action", "cancel"), "cancelled");
        answers.put(Map.of("hang", true), "timed_out");
        answers.put(Map.of("error", "the user's client broke"), "failed");
        answers.put(accept("forever"), "invalid_answer");
        answers.put(Map.of("action", "accept", "content", Map.of()), "invalid_answer");
        answers.put(Map.of("action", "accept", "content", Map.of("duration", 3600)), "invalid_answer");
        for (var a : answers.entrySet()) {
            asking.elicitAnswer(a.getKey());
            JsonNode res = request(asking, ws, "needs it");
            assertEquals(a.getValue(), res.path("outcome").asString(), a.getKey() + " -> " + res);
            assertFalse(res.path("granted").asBoolean(), res.toString());
            assertTrue(res.path("grant_id").isNull() && res.path("expires_at").isNull(), res.toString());
            assertTrue(res.path("reason").asString().endsWith("nothing was granted"), res.toString());
        }
        asking.elicitations();
        asking.elicitAnswer(Map.of("action", "cancel"));
        JsonNode still = curl(asking, ws, "/still");
        assertTrue(still.path("exit_code").asInt() != 0, still.toString());
        assertTrue(audit().contains("egress_approval_declined"));
    }

    @Test
    void hostsOutsideTheApprovalList_andHardRules_cannotBeRequested() throws Exception {
        String ws = workspace(asking);
        for (var c : List.of(
                List.of("example.org", "443", "is not approvable: the operator's approval list"),
                List.of("localhost", "22", "is not approvable"),
                List.of("169.254.169.254", "80", "can never be approved"),
                List.of("bad host!", "443", "invalid host"))) {
            JsonNode r = asking.call("request_egress", Map.of("workspace", ws, "host", c.get(0), "port", Integer.parseInt(c.get(1)), "reason", "x"));
            assertTrue(r.path("isError").asBoolean(), r.toString());
            assertTrue(r.path("content").get(0).path("text").asString().contains(c.get(2)), r.toString());
        }
        JsonNode nope = asking.call("request_egress", Map.of("workspace", "ws-nope", "host", "localhost", "port", port, "reason", "x"));
        assertTrue(nope.path("isError").asBoolean(), nope.toString());
        assertEquals(0, asking.elicitations().size());
    }

    @Test
    void clientWithoutElicitation_getsTheDenialSayingApprovalIsPossible() throws Exception {
        String ws = workspace(plain);
        JsonNode r = curl(plain, ws, "/plain");
        assertTrue(r.path("exit_code").asInt() != 0, r.toString());
        String reason = r.path("egress_denied").get(0).path("reason").asString();
        assertTrue(reason.contains("is approvable: a human can grant it to this workspace via the request_egress tool from an MCP client that supports elicitation"), reason);
        JsonNode res = request(plain, ws, "needs it");
        assertEquals("no_elicitation", res.path("outcome").asString(), res.toString());
        assertFalse(res.path("granted").asBoolean());
        JsonNode still = curl(plain, ws, "/still");
        assertTrue(still.path("exit_code").asInt() != 0, still.toString());
    }
}
