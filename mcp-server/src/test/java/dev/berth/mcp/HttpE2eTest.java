package dev.berth.mcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.berth.engine.Await;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import tools.jackson.databind.JsonNode;

/**
 * {@code berth http} with the official TypeScript client and raw HTTP: tenants cannot see or touch each other's
 * workspaces, authentication failures point at the resource metadata, DNS-rebinding protection, JWT validation,
 * quotas, and error bodies without internals.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class HttpE2eTest {
    static final String ISS = "https://idp.berth.test";
    Path dir;
    BerthHttp server;
    JwtFixture issuer;
    final HttpClient http = HttpClient.newHttpClient();

    @BeforeAll
    void start() throws Exception {
        dir = Files.createTempDirectory("berth-http-e2e-");
        issuer = JwtFixture.create();
        Files.writeString(dir.resolve("jwks.json"), issuer.publicJwks());
        server = BerthHttp.start(dir, """
                {"auth": {"tokens": [{"tenant": "alice", "sha256": "%s"}, {"tenant": "bob", "sha256": "%s"},
                                     {"tenant": "small", "sha256": "%s"}],
                          "jwt": {"issuer": "%s", "jwks_file": "jwks.json"}},
                 "tenants": {"alice": {}, "bob": {}, "carol": {}, "small": {"quota": {"workspaces": 1}}}}
                """.formatted(BearerAuthenticatorTest.sha256("alice-token"), BearerAuthenticatorTest.sha256("bob-token"),
                BearerAuthenticatorTest.sha256("small-token"), ISS));
    }

    @AfterAll
    void stop() throws Exception {
        server.close();
        boolean clean = server.stoppedCleanly();
        System.out.println(server.log()); // kept in failsafe-reports/*-output.txt
        assertTrue(clean, "berth http must shut down cleanly on SIGTERM (exit " + server.process.exitValue() + "); its log is in the test output");
        HomeLeaks.assertNone(dir); // a leak is named here, before the delete
        dev.berth.engine.spi.Trees.delete(dir);
    }

    static JsonNode ok(McpBridge mcp, String tool, Map<String, Object> args) throws IOException {
        JsonNode r = mcp.call(tool, args);
        assertFalse(r.path("isError").asBoolean(), () -> tool + " failed: " + r);
        SchemaCheck.assertValid(tool, r.path("structuredContent"));
        return r.path("structuredContent");
    }

    static String toolError(McpBridge mcp, String tool, Map<String, Object> args) throws IOException {
        JsonNode r = mcp.call(tool, args);
        assertTrue(r.path("isError").asBoolean(), () -> tool + " should have failed: " + r);
        return r.path("content").get(0).path("text").asString();
    }

    McpBridge client(String token) throws IOException {
        McpBridge b = McpBridge.http(server.url("/mcp"), token);
        b.connect();
        return b;
    }

    @Test
    void tenantB_cannotSeeOrTouchTenantAsWorkspaces_byIdOrName() throws Exception {
        try (McpBridge a = client("alice-token"); McpBridge b = client("bob-token")) {
            String id = ok(a, "open_workspace", Map.of("name", "secret-proj")).path("workspace").asString();
            ok(a, "run", Map.of("workspace", id, "command", "echo alice-data > /workspace/secret.txt"));
            String snapId = ok(a, "snapshot", Map.of("workspace", id, "name", "alice-snap")).path("snapshot").asString();

            JsonNode listB = ok(b, "list_workspaces", Map.of());
            assertFalse(listB.toString().contains(id) || listB.toString().contains("secret-proj") || listB.toString().contains("alice-snap"),
                    "tenant B's list shows A's workspace or snapshot: " + listB);
            for (String ref : List.of(id, "secret-proj")) {
                assertNotFound(toolError(b, "run", Map.of("workspace", ref, "command", "cat /workspace/secret.txt")), ref);
                assertNotFound(toolError(b, "park", Map.of("workspace", ref)), ref);
                assertNotFound(toolError(b, "snapshot", Map.of("workspace", ref, "name", "stolen")), ref);
                assertNotFound(toolError(b, "close_workspace", Map.of("workspace", ref, "delete", true)), ref);
            }
            assertNotFound(toolError(b, "open_workspace", Map.of("from_snapshot", "alice-snap")), "alice-snap");
            assertNotFound(toolError(b, "open_workspace", Map.of("from_snapshot", snapId)), snapId);
            assertFalse(listB.toString().contains(snapId), listB.toString());
            // the same name is B's own, separate workspace
            JsonNode bOwn = ok(b, "open_workspace", Map.of("name", "secret-proj"));
            assertFalse(id.equals(bOwn.path("workspace").asString()));
            JsonNode cat = ok(b, "run", Map.of("workspace", "secret-proj", "command", "cat /workspace/secret.txt || echo absent"));
            assertEquals("absent", cat.path("stdout").asString().strip());
            ok(b, "close_workspace", Map.of("workspace", "secret-proj", "delete", true));

            // A's workspace is untouched by all of that
            JsonNode still = ok(a, "run", Map.of("workspace", "secret-proj", "command", "cat /workspace/secret.txt"));
            assertEquals("alice-data", still.path("stdout").asString().strip());
            ok(a, "close_workspace", Map.of("workspace", id, "delete", true));
        }
    }

    private static void assertNotFound(String error, String ref) {
        assertTrue(error.contains("not found") || error.contains("no workspace") || error.contains("no snapshot"),
                "another tenant's '" + ref + "' must look like one that does not exist: " + error);
    }

    /** A session id is usable only by the tenant that opened the session: to anyone else it does not exist. */
    @Test
    void sessions_areBoundToTheTenantThatOpenedThem() throws Exception {
        HttpResponse<String> init = post("/mcp", "Bearer alice-token", null, initialize());
        String session = init.headers().firstValue("Mcp-Session-Id").orElseThrow();
        String list = "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}";
        HttpResponse<String> stolen = send("POST", "/mcp", "Bearer bob-token", session, list);
        assertEquals(404, stolen.statusCode(), stolen.body());
        assertEquals(404, send("DELETE", "/mcp", "Bearer bob-token", session, null).statusCode(), "bob cannot end alice's session");
        assertEquals(404, send("GET", "/mcp", "Bearer bob-token", session, null).statusCode(), "bob cannot listen on it");
        send("POST", "/mcp", "Bearer alice-token", session, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
        HttpResponse<String> own = send("POST", "/mcp", "Bearer alice-token", session, list);
        assertEquals(200, own.statusCode(), own.body());
        assertTrue(own.body().contains("open_workspace"), own.body());
        assertEquals(200, send("DELETE", "/mcp", "Bearer alice-token", session, null).statusCode());

        // legacy SSE: the session id arrives in the stream's endpoint event
        HttpResponse<InputStream> stream = http.send(HttpRequest.newBuilder(URI.create(server.url("/sse")))
                .header("Authorization", "Bearer alice-token").header("Accept", "text/event-stream").GET().build(),
                HttpResponse.BodyHandlers.ofInputStream());
        try (var events = new java.io.BufferedReader(new java.io.InputStreamReader(stream.body(), StandardCharsets.UTF_8))) {
            String endpoint = null;
            for (String line; (line = events.readLine()) != null && endpoint == null; ) {
                if (line.startsWith("data: ")) endpoint = line.substring(6);
            }
            assertTrue(endpoint != null && endpoint.contains("sessionId="), "no endpoint event: " + endpoint);
            assertEquals(404, post(endpoint, "Bearer bob-token", null, initialize()).statusCode(), "bob cannot post into alice's SSE session");
            int mine = post(endpoint, "Bearer alice-token", null, initialize()).statusCode();
            assertTrue(mine == 200 || mine == 202, "alice posts into her own SSE session: " + mine);
        }
    }

    HttpResponse<String> send(String method, String path, String authorization, String session, String body) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(server.url(path)))
                .header("Content-Type", "application/json").header("Accept", "application/json, text/event-stream")
                .header("Authorization", authorization).header("Mcp-Session-Id", session)
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void missingOrWrongToken_is401WithResourceMetadataPointer() throws Exception {
        String metadata = server.url("/.well-known/oauth-protected-resource");
        for (String auth : new String[] {null, "Bearer wrong-token", "Basic YWxpY2U6eA=="}) {
            HttpResponse<String> r = post("/mcp", auth, null, initialize());
            assertEquals(401, r.statusCode(), auth + ": " + r.body());
            String challenge = r.headers().firstValue("WWW-Authenticate").orElse("");
            assertTrue(challenge.startsWith("Bearer resource_metadata=\"" + metadata + "\""), challenge);
            assertTrue(r.body().contains("error_description"), r.body());
        }
        HttpResponse<String> sse = http.send(HttpRequest.newBuilder(URI.create(server.url("/sse"))).GET().build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(401, sse.statusCode(), "the legacy SSE endpoint is authenticated too");

        JsonNode prm = McpBridge.JSON.readTree(http.send(HttpRequest.newBuilder(URI.create(metadata)).GET().build(),
                HttpResponse.BodyHandlers.ofString()).body());
        assertEquals(server.url(""), prm.path("resource").asString());
        assertEquals(ISS, prm.path("authorization_servers").get(0).asString());
        assertEquals("header", prm.path("bearer_methods_supported").get(0).asString());
        // clients look first at the path-suffixed location for the /mcp endpoint (RFC 9728 §3.1)
        assertEquals(prm, McpBridge.JSON.readTree(http.send(HttpRequest.newBuilder(URI.create(metadata + "/mcp")).GET().build(),
                HttpResponse.BodyHandlers.ofString()).body()));

        // the real client gives up too, with the status
        try (McpBridge bad = McpBridge.http(server.url("/mcp"), "wrong-token")) {
            JsonNode r = bad.send(Map.of("op", "connect"));
            assertFalse(r.path("ok").asBoolean(), r.toString());
            assertTrue(r.toString().contains("401") || r.toString().contains("nauthorized"), r.toString());
        }
    }

    @Test
    void badOrigin_is403_badHost_isRejected_beforeAuth() throws Exception {
        HttpResponse<String> r = post("/mcp", "Bearer alice-token", "http://evil.example", initialize());
        assertEquals(403, r.statusCode(), r.body());
        assertTrue(r.body().contains("http://evil.example"), r.body());
        assertEquals(200, post("/mcp", "Bearer alice-token", "http://localhost:" + server.port, initialize()).statusCode());

        String raw = rawRequest("POST /mcp HTTP/1.1\r\nHost: evil.example:" + server.port + "\r\nAuthorization: Bearer alice-token\r\n"
                + "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: "
                + initialize().length() + "\r\nConnection: close\r\n\r\n" + initialize());
        assertTrue(raw.startsWith("HTTP/1.1 421"), raw);
        assertTrue(raw.contains("evil.example"), raw);
    }

    @Test
    void errorBodies_carryNoStackTraceOrServerVersion() throws Exception {
        List<HttpResponse<String>> rs = List.of(
                post("/mcp", "Bearer alice-token", null, "{not json"),
                post("/mcp", "Bearer alice-token", null, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}"),
                post("/message?sessionId=no-such-session", "Bearer alice-token", null, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}"),
                http.send(HttpRequest.newBuilder(URI.create(server.url("/no/such/path"))).GET().build(), HttpResponse.BodyHandlers.ofString()),
                http.send(HttpRequest.newBuilder(URI.create(server.url("/mcp"))).header("Authorization", "Bearer alice-token")
                        .PUT(HttpRequest.BodyPublishers.ofString("x")).build(), HttpResponse.BodyHandlers.ofString()));
        for (HttpResponse<String> r : rs) {
            assertTrue(r.statusCode() >= 400, r.statusCode() + " " + r.body());
            String b = r.body();
            assertFalse(b.contains("Exception") || b.contains("\tat ") || b.contains("at org.") || b.contains("at io.")
                    || b.contains("Tomcat") || b.contains("11.0"), "error body leaks internals: " + b);
            assertTrue(r.headers().firstValue("Server").isEmpty() || !r.headers().firstValue("Server").get().contains("Tomcat"));
        }
    }

    /** Issue 10's HTTP cases, each with the status and JSON-RPC error it must get: never a stack trace. */
    static java.util.stream.Stream<org.junit.jupiter.params.provider.Arguments> malformed() {
        return java.util.stream.Stream.of(
                org.junit.jupiter.params.provider.Arguments.of("malformed body", "{not json", 400, -32700, "not valid JSON"),
                org.junit.jupiter.params.provider.Arguments.of("initialize without jsonrpc", "{\"id\":1,\"method\":\"initialize\"}", 200, -32600, "\"jsonrpc\": \"2.0\" is missing"),
                org.junit.jupiter.params.provider.Arguments.of("deep nesting", "[".repeat(100_000), 400, -32600, "levels deep"),
                org.junit.jupiter.params.provider.Arguments.of("batch", "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]", 400, -32600, "batches"),
                org.junit.jupiter.params.provider.Arguments.of("initialize params of the wrong type",
                        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":5}}", 200, -32602, "protocolVersion must be a string"),
                org.junit.jupiter.params.provider.Arguments.of("nested capability of the wrong type",
                        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{\"roots\":5},\"clientInfo\":{\"name\":\"a\",\"version\":\"1\"}}}",
                        200, -32602, "roots must be an object"),
                org.junit.jupiter.params.provider.Arguments.of("request without a session", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}", 400, null, ""),
                org.junit.jupiter.params.provider.Arguments.of("over 4 MiB", "{\"jsonrpc\":\"2.0\",\"method\":\"tools/call\",\"params\":{\"content\":\"" + "a".repeat(5 << 20) + "\"},\"id\":9}",
                        413, -32600, "bytes refused"));
    }

    @ParameterizedTest(name = "{0}")
    @org.junit.jupiter.params.provider.MethodSource("malformed")
    void malformedMessage_getsAJsonRpcErrorInBerthsWords(String name, String body, int status, Integer code, String reason) throws Exception {
        for (String path : List.of("/mcp", "/message?sessionId=none")) {
            HttpResponse<String> r = post(path, "Bearer alice-token", null, body);
            String b = r.body();
            assertFalse(b.contains("Exception") || b.contains("stackTrace") || b.contains("at io.") || b.contains("tools.jackson")
                    || b.contains("Tomcat"), name + " leaks internals: " + b);
            if (!path.equals("/mcp")) continue; // the legacy endpoint refuses with 400/404/413, answers travel on its stream
            assertEquals(status, r.statusCode(), b);
            JsonNode e = McpBridge.JSON.readTree(b);
            assertEquals("2.0", e.path("jsonrpc").asString(), b);
            if (code != null) assertEquals(code.intValue(), e.path("error").path("code").asInt(), b);
            assertTrue(e.path("error").path("message").asString().contains(reason), b);
        }
        // and the server still serves a real client
        try (McpBridge mcp = client("alice-token")) {
            assertTrue(ok(mcp, "list_workspaces", Map.of()).has("workspaces"));
        }
    }

    /**
     * Found by JsonRpcFuzzE2eTest: the SDK answered a response to an unknown id with 500 (and threw on the null result),
     * and answered a roots change by asking a client that had no stream open for its roots (500).
     */
    @ParameterizedTest
    @ValueSource(strings = {"{\"jsonrpc\":\"2.0\",\"id\":13,\"result\":{}}", "{\"jsonrpc\":\"2.0\",\"id\":13,\"result\":null}",
            "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/roots/list_changed\"}"})
    void responseOrRootsChangeFromTheClient_isNeverAServerError(String body) throws Exception {
        HttpResponse<String> r = post("/mcp", "Bearer alice-token", null, body);
        assertTrue(r.statusCode() == 202 || r.statusCode() == 400, r.statusCode() + " " + r.body());
        assertFalse(r.body().contains("Exception"), r.body());
    }

    @Test
    void jwt_validWorks_wrongAudienceIssuerExpiryOrSignature_is401() throws Exception {
        String aud = server.url("");
        try (McpBridge carol = McpBridge.http(server.url("/mcp"), issuer.token(ISS, aud, "carol", 300))) {
            carol.connect();
            String id = ok(carol, "open_workspace", Map.of()).path("workspace").asString();
            assertEquals("hi", ok(carol, "run", Map.of("workspace", id, "command", "echo hi")).path("stdout").asString().strip());
            JsonNode streamed = carol.callWithProgress("run", Map.of("workspace", id, "command", "for i in 1 2 3; do echo p$i; sleep 0.2; done"));
            assertTrue(streamed.path("progress").size() >= 1, "progress notifications arrive over Streamable HTTP: " + streamed);
            ok(carol, "close_workspace", Map.of("workspace", id));
        }
        Map<String, String> bad = Map.of(
                "aud", issuer.token(ISS, "https://other-resource.example", "carol", 300),
                "iss", issuer.token("https://evil-idp.example", aud, "carol", 300),
                "xpired", issuer.token(ISS, aud, "carol", -300),
                "ignature", JwtFixture.create().token(ISS, aud, "carol", 300));
        for (var e : bad.entrySet()) {
            HttpResponse<String> r = post("/mcp", "Bearer " + e.getValue(), null, initialize());
            assertEquals(401, r.statusCode(), e.getKey() + ": " + r.body());
            assertTrue(r.body().contains(e.getKey()), e.getKey() + " should be named in: " + r.body());
            assertTrue(r.headers().firstValue("WWW-Authenticate").orElse("").contains("error=\"invalid_token\""));
        }
    }

    @Test
    void quotaExceeded_isAToolErrorNamingTheQuota() throws Exception {
        try (McpBridge s = client("small-token")) {
            String id = ok(s, "open_workspace", Map.of()).path("workspace").asString();
            String err = toolError(s, "open_workspace", Map.of());
            assertTrue(err.contains("quota of tenant 'small'") && err.contains("workspaces: 1 open, limit 1"), err);
            ok(s, "close_workspace", Map.of("workspace", id));
        }
    }

    @Test
    void legacySseTransport_servesTheSameTools() throws Exception {
        try (McpBridge sse = McpBridge.sse(server.url("/sse"), "bob-token")) {
            JsonNode hello = sse.connect();
            assertEquals("berth", hello.path("serverInfo").path("name").asString());
            assertEquals(dev.berth.schemas.ToolCatalog.load().tools().size(), sse.send(Map.of("op", "list")).path("tools").size());
            String id = ok(sse, "open_workspace", Map.of()).path("workspace").asString();
            JsonNode run = sse.callWithProgress("run", Map.of("workspace", id, "command", "for i in 1 2 3; do echo line$i; sleep 0.2; done"));
            assertEquals("line1\nline2\nline3", run.path("result").path("structuredContent").path("stdout").asString().strip());
            assertTrue(run.path("progress").size() >= 1, "progress notifications arrive over SSE too: " + run);
            ok(sse, "close_workspace", Map.of("workspace", id));
        }
    }

    /**
     * The client aborts a long run: the TS client sends notifications/cancelled, and the command must be gone from
     * the workspace (the SDK alone would let it sleep on for 300 s).
     */
    @ParameterizedTest
    @ValueSource(strings = {"http", "sse"})
    void cancelledRun_killsTheCommandInsideTheWorkspace(String transport) throws Exception {
        try (McpBridge c = "http".equals(transport) ? McpBridge.http(server.url("/mcp"), "alice-token")
                : McpBridge.sse(server.url("/sse"), "alice-token")) {
            c.connect();
            String id = ok(c, "open_workspace", Map.of()).path("workspace").asString();
            long t0 = System.nanoTime();
            JsonNode aborted = c.send(Map.of("op", "cancel-call", "name", "run", "cancelAfterMs", 2000, "args", Map.of("workspace", id,
                    "command", "echo $$ > /workspace/run.pid; touch /workspace/started; sleep 300; touch /workspace/finished")));
            assertFalse(aborted.path("ok").asBoolean(), "the client saw the call aborted: " + aborted);
            assertEquals("started\n0", commandGone(c, id), "after cancel the command must be gone (started, not finished, no shell, no sleep)");
            assertTrue(System.nanoTime() - t0 < 60_000_000_000L);
            ok(c, "close_workspace", Map.of("workspace", id));
        }
    }

    /**
     * What is left in the workspace of the cancelled command: "started" marker, "finished" marker, "shell-alive",
     * then the count of its sleep processes. Polls up to 10 s for "started\n0" (the kill is asynchronous to the abort).
     */
    /**
     * Whether the cancelled command is gone, seen from a later run. Its pid is not checked: on namespace and gVisor
     * every run has its own pid namespace (the recorded $$ names another process there), and the run init's exit
     * killed the whole namespace; in a microVM the scan of the guest's processes below still sees a survivor.
     */
    static String commandGone(McpBridge c, String workspace) throws Exception {
        String check = "test -e /workspace/started && echo started; test -e /workspace/finished && echo finished; "
                + "for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f 2>/dev/null; echo; done | grep -c 'sleep 30[0]' || true";
        String[] out = {""};
        Await.within(Duration.ofSeconds(30), () -> (out[0] = ok(c, "run", Map.of("workspace", workspace, "command", check))
                .path("stdout").asString().strip()).equals("started\n0"));
        return out[0];
    }

    /** A config the server cannot use stops it before it listens, with the reason and exit code 2. */
    @Test
    void brokenConfig_stopsBerthHttpWithTheReason() throws Exception {
        Path cfg = dir.resolve("broken.json");
        Files.writeString(cfg, "{\"auth\": {\"tokens\": []}, \"tenants\": {}, \"htttp\": {}}");
        Process p = new ProcessBuilder(McpBridge.javaBin(), "-jar", McpBridge.JAR.toString(), "http", "--config", cfg.toString(),
                "--home", dir.resolve("unused-home").toString()).redirectErrorStream(true).start();
        p.getOutputStream().close();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(30, java.util.concurrent.TimeUnit.SECONDS));
        assertEquals(2, p.exitValue(), out);
        assertTrue(out.contains("unknown key 'htttp'") && out.contains(cfg.toString()), out);
    }

    @Test
    void portInUse_stopsBerthHttpWithTheReason() throws Exception {
        try (java.net.ServerSocket taken = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            Process p = new ProcessBuilder(McpBridge.javaBin(), "-jar", McpBridge.JAR.toString(), "http", "--config",
                    dir.resolve("berth.json").toString(), "--home", dir.resolve("unused-home").toString(),
                    "--port", String.valueOf(taken.getLocalPort())).redirectErrorStream(true).start();
            p.getOutputStream().close();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertTrue(p.waitFor(30, java.util.concurrent.TimeUnit.SECONDS));
            assertEquals(1, p.exitValue(), out);
            assertTrue(out.contains("berth: cannot listen on 127.0.0.1:" + taken.getLocalPort() + ": Address already in use"), out);
        }
    }

    static String initialize() {
        return "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\","
                + "\"capabilities\":{},\"clientInfo\":{\"name\":\"raw\",\"version\":\"1\"}}}";
    }

    HttpResponse<String> post(String path, String authorization, String origin, String body) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(server.url(path)))
                .header("Content-Type", "application/json").header("Accept", "application/json, text/event-stream")
                .POST(HttpRequest.BodyPublishers.ofString(body));
        if (authorization != null) b.header("Authorization", authorization);
        if (origin != null) b.header("Origin", origin);
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    /** java.net.http will not send a forged Host header, so this one goes over a plain socket. */
    String rawRequest(String request) throws IOException {
        try (Socket s = new Socket("127.0.0.1", server.port)) {
            s.setSoTimeout(10_000);
            OutputStream out = s.getOutputStream();
            out.write(request.getBytes(StandardCharsets.UTF_8));
            out.flush();
            InputStream in = s.getInputStream();
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }
}
