package dev.berth.mcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Pattern;
import net.jqwik.api.ForAll;
import net.jqwik.api.From;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;
import tools.jackson.databind.JsonNode;

/**
 * Property-based fuzzing of the JSON-RPC boundary on every transport (jqwik): each try sends a batch of generated
 * malformed or adversarial messages ({@link AdversarialJsonRpc}), then a {@code ping} and a real tool call
 * ({@code list_workspaces}) that must both succeed. Every answer on the way must be JSON-RPC 2.0, and no error may
 * name Java internals. stdio, Streamable HTTP and legacy SSE each run {@value #TRIES} tries per run, against one
 * server each (a server that went deaf fails every later try). Cases found here are kept as named regressions in
 * {@link StdioHardeningE2eTest} and {@code MessageCheckTest}.
 */
class JsonRpcFuzzE2eTest {
    static final int TRIES = 1000;
    static final Pattern INTERNALS = Pattern.compile("Exception|stackTrace|tools\\.jackson|io\\.modelcontextprotocol|org\\.apache|"
            + "\\bat [a-z]+\\.[a-z]|Tomcat|dev\\.berth");
    static final String TOKEN = "fuzz-token";
    static final AtomicInteger PROBES = new AtomicInteger();
    static final AtomicInteger MESSAGES = new AtomicInteger();

    static Path dir;
    static RawStdio stdio;
    static BerthHttp http;
    static final HttpClient CLIENT = HttpClient.newHttpClient();
    static String mcpSession;
    static SseSession sse;
    static long started;

    @BeforeContainer
    static void start() throws Exception {
        started = System.nanoTime();
        dir = Files.createTempDirectory("berth-fuzz-");
        Files.setPosixFilePermissions(dir, java.nio.file.attribute.PosixFilePermissions.fromString("rwx--x--x"));
        stdio = RawStdio.initialized(Files.createDirectories(dir.resolve("stdio-home")));
        http = BerthHttp.start(Files.createDirectories(dir.resolve("http")), """
                {"auth": {"tokens": [{"tenant": "fuzz", "sha256": "%s"}]}, "tenants": {"fuzz": {}}}
                """.formatted(BearerAuthenticatorTest.sha256(TOKEN)));
        HttpResponse<String> init = post("/mcp", null, McpBridge.JSON.writeValueAsString(Map.of("jsonrpc", "2.0", "id", "probe-init",
                "method", "initialize", "params", Map.of("protocolVersion", "2025-06-18", "capabilities", Map.of(),
                        "clientInfo", Map.of("name", "fuzz", "version", "1")))));
        mcpSession = init.headers().firstValue("Mcp-Session-Id").orElseThrow(() -> new AssertionError("no session: " + init.body()));
        post("/mcp", mcpSession, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
        sse = new SseSession();
    }

    @AfterContainer
    static void stop() throws Exception {
        System.out.printf("JsonRpcFuzzE2eTest: %d generated messages, %d probes, %.1f s%n", MESSAGES.get(), PROBES.get(),
                (System.nanoTime() - started) / 1e9);
        if (sse != null) sse.close();
        if (http != null) {
            http.close();
            System.out.println(http.log());
        }
        try {
            if (stdio != null) {
                stdio.closeInput();
                assertEquals(0, stdio.awaitExit(60), "stdio server after the fuzzing");
            }
        } finally {
            HomeLeaks.assertNone(dir); // a leak is named here, before the delete
            dev.berth.engine.spi.Trees.delete(dir);
        }
    }

    @Provide
    Arbitrary<List<byte[]>> batches() {
        return AdversarialJsonRpc.batch();
    }

    /** The batch as readable text, for failure messages (jqwik prints the raw byte arrays). */
    static String describe(List<byte[]> batch) {
        List<String> shown = new ArrayList<>();
        for (byte[] b : batch) {
            String t = new String(b, StandardCharsets.UTF_8);
            shown.add(t.length() > 300 ? t.substring(0, 300) + "... (" + b.length + " bytes)" : t);
        }
        return shown.toString();
    }

    static void assertClean(String what, String text) {
        assertFalse(INTERNALS.matcher(text).find(), () -> what + " names internals: " + text.substring(0, Math.min(text.length(), 2000)));
    }

    // ---- stdio ----

    @Property(tries = TRIES)
    void stdio_anyBatch_leavesTheSessionServing(@ForAll @From("batches") List<byte[]> batch) throws Exception {
        try {
            sendStdioBatch(batch);
        } catch (AssertionError | IOException e) {
            throw new AssertionError(e + "\n  after the batch " + describe(batch), e);
        }
    }

    private void sendStdioBatch(List<byte[]> batch) throws Exception {
        for (byte[] m : batch) {
            stdio.send(m);
            stdio.send(new byte[] {'\n'});
            MESSAGES.incrementAndGet();
        }
        String ping = "probe-" + PROBES.incrementAndGet();
        stdio.sendLine("{\"jsonrpc\":\"2.0\",\"id\":\"" + ping + "\",\"method\":\"ping\"}");
        String call = "probe-" + PROBES.incrementAndGet();
        stdio.sendLine("{\"jsonrpc\":\"2.0\",\"id\":\"" + call + "\",\"method\":\"tools/call\",\"params\":{\"name\":\"list_workspaces\",\"arguments\":{}}}");
        boolean pinged = false;
        while (true) {
            JsonNode m = stdio.next(60);
            assertClean("stdio answer", m.toString());
            String id = m.path("id").asString("");
            if (id.equals(ping)) {
                assertTrue(m.path("result").isObject(), m::toString);
                pinged = true;
            } else if (id.equals(call)) {
                assertTrue(pinged, "the tool call was answered before the ping");
                assertFalse(m.path("result").path("isError").asBoolean(true), m::toString);
                return;
            }
        }
    }

    // ---- Streamable HTTP ----

    static HttpResponse<String> post(String path, String session, byte[] body) throws IOException, InterruptedException {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(http.url(path))).timeout(java.time.Duration.ofSeconds(60))
                .header("Authorization", "Bearer " + TOKEN).header("Content-Type", "application/json")
                .header("Accept", "application/json, text/event-stream").POST(HttpRequest.BodyPublishers.ofByteArray(body));
        if (session != null) b.header("Mcp-Session-Id", session);
        return CLIENT.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    static HttpResponse<String> post(String path, String session, String body) throws IOException, InterruptedException {
        return post(path, session, body.getBytes(StandardCharsets.UTF_8));
    }

    /** The JSON-RPC messages of a Streamable HTTP answer (JSON, or SSE data lines). */
    static List<JsonNode> messages(HttpResponse<String> r) {
        List<JsonNode> out = new ArrayList<>();
        if (r.body().isBlank()) return out;
        if (r.headers().firstValue("Content-Type").orElse("").startsWith("text/event-stream")) {
            for (String line : r.body().split("\n")) if (line.startsWith("data:")) out.add(McpBridge.JSON.readTree(line.substring(5).trim()));
        } else {
            out.add(McpBridge.JSON.readTree(r.body()));
        }
        return out;
    }

    @Property(tries = TRIES)
    void streamableHttp_anyBatch_isAnsweredAndTheSessionKeepsServing(@ForAll @From("batches") List<byte[]> batch) throws Exception {
        try {
            sendStreamableHttpBatch(batch);
        } catch (AssertionError | IOException e) {
            throw new AssertionError(e + "\n  after the batch " + describe(batch), e);
        }
    }

    private void sendStreamableHttpBatch(List<byte[]> batch) throws Exception {
        for (byte[] m : batch) {
            HttpResponse<String> r = post("/mcp", mcpSession, m);
            MESSAGES.incrementAndGet();
            assertTrue(List.of(200, 202, 400, 404, 413).contains(r.statusCode()), () -> r.statusCode() + " " + r.body());
            assertClean("HTTP " + r.statusCode() + " body", r.body());
            if (r.statusCode() >= 400 && !r.body().isBlank()) {
                JsonNode e = McpBridge.JSON.readTree(r.body());
                assertTrue(e.has("error"), r::body);
            }
        }
        String ping = "probe-" + PROBES.incrementAndGet();
        HttpResponse<String> p = post("/mcp", mcpSession, "{\"jsonrpc\":\"2.0\",\"id\":\"" + ping + "\",\"method\":\"ping\"}");
        assertEquals(200, p.statusCode(), p::body);
        assertTrue(messages(p).stream().anyMatch(m -> m.path("id").asString("").equals(ping) && m.path("result").isObject()), p::body);
        String call = "probe-" + PROBES.incrementAndGet();
        HttpResponse<String> c = post("/mcp", mcpSession, "{\"jsonrpc\":\"2.0\",\"id\":\"" + call
                + "\",\"method\":\"tools/call\",\"params\":{\"name\":\"list_workspaces\",\"arguments\":{}}}");
        assertTrue(messages(c).stream().anyMatch(m -> m.path("id").asString("").equals(call) && !m.path("result").path("isError").asBoolean(true)), c::body);
    }

    // ---- legacy HTTP+SSE ----

    /** A legacy SSE session: GET /sse streams the answers, messages are POSTed to the endpoint it names. */
    static final class SseSession implements AutoCloseable {
        final BlockingQueue<JsonNode> answers = new LinkedBlockingQueue<>();
        final String endpoint;
        final Thread reader;
        final java.io.InputStream stream;

        SseSession() throws Exception {
            HttpResponse<java.io.InputStream> r = CLIENT.send(HttpRequest.newBuilder(URI.create(http.url("/sse")))
                    .header("Authorization", "Bearer " + TOKEN).header("Accept", "text/event-stream").GET().build(),
                    HttpResponse.BodyHandlers.ofInputStream());
            stream = r.body();
            BlockingQueue<String> endpoints = new LinkedBlockingQueue<>();
            reader = Thread.ofPlatform().daemon().start(() -> {
                try (BufferedReader in = new BufferedReader(new InputStreamReader(stream, StandardCharsets.UTF_8))) {
                    String event = "";
                    for (String line; (line = in.readLine()) != null; ) {
                        if (line.startsWith("event:")) event = line.substring(6).trim();
                        else if (line.startsWith("data:") && event.equals("endpoint")) endpoints.add(line.substring(5).trim());
                        else if (line.startsWith("data:")) answers.add(McpBridge.JSON.readTree(line.substring(5).trim()));
                    }
                } catch (IOException ignored) {
                    // closed
                }
            });
            endpoint = endpoints.poll(60, TimeUnit.SECONDS);
            if (endpoint == null) throw new AssertionError("no endpoint event on /sse");
            post(endpoint, null, McpBridge.JSON.writeValueAsString(Map.of("jsonrpc", "2.0", "id", "probe-sse-init", "method", "initialize",
                    "params", Map.of("protocolVersion", "2024-11-05", "capabilities", Map.of(), "clientInfo", Map.of("name", "fuzz", "version", "1")))));
            await("probe-sse-init");
            post(endpoint, null, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
        }

        JsonNode await(String id) throws InterruptedException {
            while (true) {
                JsonNode m = answers.poll(60, TimeUnit.SECONDS);
                if (m == null) throw new AssertionError("no answer to " + id + " on the SSE stream in 60 s");
                assertClean("SSE answer", m.toString());
                if (m.path("id").asString("").equals(id)) return m;
            }
        }

        @Override
        public void close() throws IOException {
            stream.close();
        }
    }

    @Property(tries = TRIES)
    void legacySse_anyBatch_isAnsweredAndTheSessionKeepsServing(@ForAll @From("batches") List<byte[]> batch) throws Exception {
        try {
            sendLegacySseBatch(batch);
        } catch (AssertionError | IOException e) {
            throw new AssertionError(e + "\n  after the batch " + describe(batch), e);
        }
    }

    private void sendLegacySseBatch(List<byte[]> batch) throws Exception {
        for (byte[] m : batch) {
            HttpResponse<String> r = post(sse.endpoint, null, m);
            MESSAGES.incrementAndGet();
            assertTrue(List.of(200, 202, 400, 404, 413).contains(r.statusCode()), () -> r.statusCode() + " " + r.body());
            assertClean("HTTP " + r.statusCode() + " body", r.body());
        }
        String ping = "probe-" + PROBES.incrementAndGet();
        HttpResponse<String> p = post(sse.endpoint, null, "{\"jsonrpc\":\"2.0\",\"id\":\"" + ping + "\",\"method\":\"ping\"}");
        assertTrue(p.statusCode() < 300, p::body);
        assertTrue(sse.await(ping).path("result").isObject());
        String call = "probe-" + PROBES.incrementAndGet();
        post(sse.endpoint, null, "{\"jsonrpc\":\"2.0\",\"id\":\"" + call + "\",\"method\":\"tools/call\",\"params\":{\"name\":\"list_workspaces\",\"arguments\":{}}}");
        JsonNode c = sse.await(call);
        assertFalse(c.path("result").path("isError").asBoolean(true), c::toString);
    }
}
