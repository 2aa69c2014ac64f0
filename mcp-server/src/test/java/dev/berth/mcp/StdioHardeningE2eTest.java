package dev.berth.mcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import tools.jackson.databind.JsonNode;

/**
 * The stdio server never goes deaf: each bad input of issue 10 (and each the fuzz suite found) is sent to one running
 * {@code berth.jar stdio}, must get the named answer (or, for a notification or a response, none), and must leave the
 * session serving: a ping and a real tool call succeed after every case. Then stdin's end stops the server in every
 * state it can be in.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class StdioHardeningE2eTest {
    static final int NO_ANSWER = 0;
    static final int RESULT = 1;
    Path home;
    RawStdio server;

    @BeforeAll
    void start() throws Exception {
        home = Files.createTempDirectory("berth-hardening-");
        server = RawStdio.initialized(home);
    }

    @AfterAll
    void stop() throws Exception {
        server.closeInput();
        assertEquals(0, server.awaitExit(90));
        HomeLeaks.assertNone(home);
        dev.berth.engine.spi.Trees.delete(home);
    }

    static byte[] utf8(String s) { return (s + "\n").getBytes(StandardCharsets.UTF_8); }

    static Stream<Arguments> badInput() {
        return Stream.of(
                // name, bytes sent, expected: an error code, RESULT or NO_ANSWER; the id the answer must carry; words in the reason
                Arguments.of("invalid UTF-8 bytes", new byte[] {(byte) 0xff, (byte) 0xfe, (byte) 0xfd, '\n'}, -32700, null, "UTF-8"),
                Arguments.of("plain text", utf8("hello"), -32700, null, "not valid JSON"),
                Arguments.of("empty object", utf8("{}"), -32600, null, "jsonrpc"),
                Arguments.of("request without jsonrpc", utf8("{\"id\":1,\"method\":\"tools/list\"}"), -32600, 1, "jsonrpc"),
                Arguments.of("object as id", utf8("{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"ping\"}"), -32600, null, "id must be"),
                Arguments.of("batch array", utf8("[{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}]"), -32600, null, "batches"),
                Arguments.of("100k nested arrays", utf8("[".repeat(100_000)), -32600, null, "levels deep"),
                Arguments.of("10 MB non-JSON line", utf8("x".repeat(10 << 20)), -32600, null, "bytes refused"),
                Arguments.of("params of the wrong type", utf8("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":[]}}"), -32602, 3, "name must be a string"),
                Arguments.of("nested param of the wrong type", utf8("{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{\"sampling\":1},\"clientInfo\":{\"name\":\"x\",\"version\":\"1\"}}}"), -32602, 4, "sampling must be an object"),
                Arguments.of("notification with an id", utf8("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"notifications/initialized\"}"), -32600, 5, "must not carry an id"),
                Arguments.of("unknown method", utf8("{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"shutdown\"}"), -32601, 6, "not offered"),
                Arguments.of("unknown tool", utf8("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"rm_rf\",\"arguments\":{}}}"), -32602, 7, "rm_rf"),
                Arguments.of("response sent to the server", utf8("{\"jsonrpc\":\"2.0\",\"id\":8,\"result\":{}}"), NO_ANSWER, null, ""),
                Arguments.of("cancel for an unknown id", utf8("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":4242}}"), NO_ANSWER, null, ""),
                Arguments.of("unknown notification", utf8("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/whatever\"}"), NO_ANSWER, null, ""),
                Arguments.of("blank line", utf8("   "), NO_ANSWER, null, ""),
                Arguments.of("CRLF line ending", "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\"}\r\n".getBytes(StandardCharsets.UTF_8), RESULT, 9, ""),
                Arguments.of("UTF-8 BOM", utf8("\uFEFF{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"ping\"}"), RESULT, 10, ""),
                // found by JsonRpcFuzzE2eTest: the SDK threw on these and the reader stopped for good
                Arguments.of("response with a null result", utf8("{\"jsonrpc\":\"2.0\",\"id\":13,\"result\":null}"), NO_ANSWER, null, ""),
                Arguments.of("response whose error is a string", utf8("{\"jsonrpc\":\"2.0\",\"id\":14,\"error\":\"bad\"}"), NO_ANSWER, null, ""),
                Arguments.of("roots changed (Berth uses no roots; the SDK would ask the client for them)",
                        utf8("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/roots/list_changed\"}"), NO_ANSWER, null, ""),
                Arguments.of("setLevel without params (the SDK's NullPointerException text leaked)",
                        utf8("{\"jsonrpc\":\"2.0\",\"id\":15,\"method\":\"logging/setLevel\"}"), -32602, 15, "params are required"),
                Arguments.of("number too long for the parser", utf8("{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"ping\",\"params\":{\"n\":" + "9".repeat(5000) + "}}"), -32700, null, "not valid JSON"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("badInput")
    void badInput_isAnsweredAndTheSessionKeepsServing(String name, byte[] bytes, int expected, Integer id, String reason) throws Exception {
        server.send(bytes);
        if (expected != NO_ANSWER) {
            JsonNode m = server.next(60);
            assertEquals(id == null ? null : id.longValue(), m.get("id").isNull() ? null : m.get("id").asLong(), m::toString);
            if (expected == RESULT) {
                assertTrue(m.has("result"), m::toString);
            } else {
                assertEquals(expected, m.path("error").path("code").asInt(), m::toString);
                String text = m.path("error").path("message").asString();
                assertTrue(text.contains(reason), () -> "'" + text + "' should say '" + reason + "'");
                assertFalse(m.path("error").has("data"), m::toString);
                assertFalse(text.matches("(?s).*(Exception|tools\\.jackson|io\\.modelcontextprotocol|\\bat [a-z]+\\.).*"), text);
            }
        }
        server.assertAlive(); // an unexpected extra answer would arrive here instead of the ping's and fail it
    }

    @Test
    void writeFileOf30MB_isRefusedNamingItsIdAndSize_andTheSessionKeepsServing() throws Exception {
        String msg = McpBridge.JSON.writeValueAsString(Map.of("jsonrpc", "2.0", "method", "tools/call", "params",
                Map.of("name", "write_file", "arguments", Map.of("workspace", "w", "path", "big", "content", "a".repeat(30 << 20))), "id", 30));
        server.sendLine(msg);
        JsonNode m = server.next(120);
        assertEquals(30, m.path("id").asInt(), m::toString);
        assertEquals(-32600, m.path("error").path("code").asInt());
        assertTrue(m.path("error").path("message").asString().contains("message of " + msg.length() + " bytes refused"), m::toString);
        server.assertAlive();
    }

    @Test
    void duplicateRequestIdInFlight_isRefused_theFirstStillAnswered() throws Exception {
        JsonNode open = server.request("tools/call", Map.of("name", "open_workspace", "arguments", Map.of()));
        String ws = open.path("result").path("structuredContent").path("workspace").asString();
        assertFalse(ws.isEmpty(), open::toString);
        String run = McpBridge.JSON.writeValueAsString(Map.of("jsonrpc", "2.0", "id", "dup", "method", "tools/call", "params",
                Map.of("name", "run", "arguments", Map.of("workspace", ws, "command", "sleep 1; echo first"))));
        server.sendLine(run);
        server.sendLine(run);
        JsonNode refused = server.next(60);
        assertEquals("dup", refused.path("id").asString());
        assertTrue(refused.path("error").path("message").asString().contains("still in flight"), refused::toString);
        JsonNode first = server.next(120);
        assertEquals("first\n", first.path("result").path("structuredContent").path("stdout").asString(), first::toString);
        server.request("tools/call", Map.of("name", "close_workspace", "arguments", Map.of("workspace", ws)));
        server.assertAlive();
    }

    @Test
    void requestBeforeInitialize_isRefused_pingIsAnswered() throws Exception {
        Path h = Files.createTempDirectory("berth-hardening-pre-");
        try (RawStdio s = new RawStdio(h)) {
            JsonNode list = s.request("tools/list", null);
            assertEquals(-32600, list.path("error").path("code").asInt(), list::toString);
            assertTrue(list.path("error").path("message").asString().contains("send initialize first"));
            assertTrue(s.request("ping", null).path("result").isObject());
        } finally {
            dev.berth.engine.spi.Trees.delete(h);
        }
    }

    static Stream<Arguments> eofStates() {
        return Stream.of(
                Arguments.of("before anything was sent", new byte[0], false),
                Arguments.of("after the handshake", new byte[0], true),
                Arguments.of("after half a line", "{\"jsonrpc\":\"2.0\",\"id\":1,\"meth".getBytes(StandardCharsets.UTF_8), true),
                Arguments.of("inside an oversize line", ("{\"jsonrpc\":\"2.0\",\"params\":\"" + "y".repeat(5 << 20)).getBytes(StandardCharsets.UTF_8), true),
                Arguments.of("after a malformed line", utf8("\u0000garbage"), true),
                Arguments.of("with a command running", utf8("{\"jsonrpc\":\"2.0\",\"id\":\"open\",\"method\":\"tools/call\",\"params\":{\"name\":\"open_workspace\",\"arguments\":{\"name\":\"eof-test\"}}}"), true));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("eofStates")
    void endOfStdin_stopsTheServer_inEveryState(String name, byte[] bytes, boolean handshake) throws Exception {
        Path h = Files.createTempDirectory("berth-hardening-eof-");
        try (RawStdio s = handshake ? RawStdio.initialized(h) : new RawStdio(h)) {
            s.send(bytes);
            if (name.equals("with a command running")) {
                assertTrue(s.next(120).path("result").has("structuredContent"));
                s.sendLine("{\"jsonrpc\":\"2.0\",\"id\":\"run\",\"method\":\"tools/call\",\"params\":{\"name\":\"run\",\"arguments\":{\"workspace\":\"eof-test\",\"command\":\"sleep 600\"}}}");
            }
            s.closeInput();
            assertEquals(0, s.awaitExit(90), name);
            HomeLeaks.assertNone(h); // a stop with a command running leaves nothing mounted (issue 33)
        } finally {
            if (HomeLeaks.find(h).isEmpty()) dev.berth.engine.spi.Trees.delete(h); // a leaking home is kept for inspection
        }
    }
}
