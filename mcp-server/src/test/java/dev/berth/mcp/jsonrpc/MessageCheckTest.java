package dev.berth.mcp.jsonrpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** Each bad message of the issue, named, with the code, the id and the reason it must be refused with. */
class MessageCheckTest {
    static Stream<Arguments> refused() {
        return Stream.of(
                // name, message, code, id in the answer, words the reason must contain
                Arguments.of("plain text", "hello", -32700, null, "not valid JSON"),
                Arguments.of("invalid UTF-8", "\u00ff\u00fe\u00fd", -32700, null, "not valid UTF-8"),
                Arguments.of("truncated JSON", "{\"jsonrpc\":\"2.0\",\"id\":1,", -32700, null, "not valid JSON"),
                Arguments.of("two messages on one line", "{\"jsonrpc\":\"2.0\",\"method\":\"a\"} {}", -32700, null, "not valid JSON"),
                Arguments.of("empty object", "{}", -32600, null, "\"jsonrpc\": \"2.0\" is missing"),
                Arguments.of("no jsonrpc member", "{\"id\":1,\"method\":\"tools/list\"}", -32600, 1L, "\"jsonrpc\": \"2.0\" is missing"),
                Arguments.of("jsonrpc 1.0", "{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}", -32600, 1L, "\"jsonrpc\": \"2.0\""),
                Arguments.of("jsonrpc as a number", "{\"jsonrpc\":2.0,\"id\":1,\"method\":\"ping\"}", -32600, 1L, "\"jsonrpc\": \"2.0\""),
                Arguments.of("object as id", "{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"ping\"}", -32600, null, "id must be a string or an integer"),
                Arguments.of("null id", "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}", -32600, null, "this one is null"),
                Arguments.of("fractional id", "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}", -32600, null, "fractional"),
                Arguments.of("batch", "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]", -32600, null, "batches"),
                Arguments.of("empty batch", "[]", -32600, null, "batches"),
                Arguments.of("a string", "\"ping\"", -32600, null, "this is a string"),
                Arguments.of("a number", "42", -32600, null, "this is a number"),
                Arguments.of("no method", "{\"jsonrpc\":\"2.0\",\"id\":3}", -32600, 3L, "no \"method\""),
                Arguments.of("method a number", "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":7}", -32600, 3L, "\"method\" must be a non-empty string"),
                Arguments.of("empty method", "{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"\"}", -32600, "a", "non-empty string"),
                Arguments.of("notification with an id", "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"notifications/initialized\"}", -32600, 4L, "must not carry an id"),
                Arguments.of("params an array", "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/list\",\"params\":[]}", -32602, 5L, "params must be an object"),
                Arguments.of("tools/call name a number", "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/call\",\"params\":{\"name\":5}}", -32602, 6L, "name must be a string, not a number"),
                Arguments.of("tools/call without params", "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/call\"}", -32602, 6L, "params are required"),
                Arguments.of("tools/call arguments a string", "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/call\",\"params\":{\"name\":\"run\",\"arguments\":\"x\"}}", -32602, 6L, "arguments must be an object"),
                Arguments.of("progress token an object", "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"tools/list\",\"params\":{\"_meta\":{\"progressToken\":{}}}}", -32602, 6L, "progressToken"),
                Arguments.of("initialize version a number", "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":5,\"clientInfo\":{\"name\":\"a\"}}}", -32602, 0L, "protocolVersion must be a string"),
                Arguments.of("initialize roots a number", "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{\"roots\":5},\"clientInfo\":{\"name\":\"a\"}}}", -32602, 0L, "roots must be an object"),
                Arguments.of("initialize without clientInfo", "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\"}}", -32602, 0L, "clientInfo is required"),
                Arguments.of("setLevel without params (found by the fuzz suite)", "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"logging/setLevel\"}", -32602, 0L, "params are required"),
                Arguments.of("unknown log level", "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"logging/setLevel\",\"params\":{\"level\":\"loud\"}}", -32602, 9L, "level must be one of"),
                Arguments.of("deep nesting", "[".repeat(100_000), -32600, null, "more than 64 levels"),
                Arguments.of("deep nesting inside params", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":{\"a\":" + "[".repeat(70) + "]".repeat(70) + "}}",
                        -32600, null, "more than 64 levels"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("refused")
    void check_badMessage_isRefusedWithCodeIdAndReason(String name, String message, int code, Object id, String reason) {
        byte[] b = name.equals("invalid UTF-8") ? new byte[] {(byte) 0xff, (byte) 0xfe, (byte) 0xfd} : message.getBytes(StandardCharsets.UTF_8);
        Refusal r = assertInstanceOf(Refusal.class, MessageCheck.check(b, b.length), name);
        assertEquals(code, r.code(), r.reason());
        assertEquals(id, r.id(), r.reason());
        assertTrue(r.reason().contains(reason), () -> "reason '" + r.reason() + "' should say '" + reason + "'");
        assertFalse(ErrorReplies.looksInternal(r.reason()), r.reason());
        assertTrue(r.answer());
        assertTrue(r.toJson().startsWith("{\"jsonrpc\":\"2.0\",\"id\":"), r.toJson());
    }

    static Stream<Arguments> accepted() {
        return Stream.of(
                Arguments.of("request", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}", "tools/list", 1L),
                Arguments.of("string id", "{\"jsonrpc\":\"2.0\",\"id\":\"a-1\",\"method\":\"ping\"}", "ping", "a-1"),
                Arguments.of("notification", "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", "notifications/initialized", null),
                Arguments.of("cancel of an unknown id", "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":999}}", "notifications/cancelled", null),
                Arguments.of("response", "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{}}", null, 7L),
                Arguments.of("UTF-8 BOM", "\uFEFF{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", "ping", 1L),
                Arguments.of("unknown method", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"shutdown\"}", "shutdown", 1L),
                Arguments.of("brackets inside strings do not count as depth",
                        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\",\"params\":{\"s\":\"" + "[{".repeat(200) + "\\\"\"}}", "x", 1L));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("accepted")
    void check_wellFormedMessage_isAccepted(String name, String message, String method, Object id) {
        byte[] b = message.getBytes(StandardCharsets.UTF_8);
        MessageCheck.Accepted a = assertInstanceOf(MessageCheck.Accepted.class, MessageCheck.check(b, b.length), name);
        assertEquals(method, a.method());
        assertEquals(id, a.id());
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("unanswered")
    void check_badNotificationOrResponse_isRefusedWithoutAnswer(String name, String message) {
        byte[] b = message.getBytes(StandardCharsets.UTF_8);
        Refusal r = assertInstanceOf(Refusal.class, MessageCheck.check(b, b.length), name);
        assertFalse(r.answer(), "JSON-RPC never answers a notification or a response: " + r);
    }

    static Stream<Arguments> unanswered() {
        return Stream.of(
                Arguments.of("cancel with an object requestId", "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":{}}}"),
                Arguments.of("response with an object id", "{\"jsonrpc\":\"2.0\",\"id\":{},\"result\":{}}"),
                Arguments.of("response without an id", "{\"jsonrpc\":\"2.0\",\"result\":{}}"),
                // found by JsonRpcFuzzE2eTest: the SDK's JSONRPCResponse throws on these, which stopped the stdio reader
                Arguments.of("response with a null result", "{\"jsonrpc\":\"2.0\",\"id\":13,\"result\":null}"),
                Arguments.of("response with both result and error", "{\"jsonrpc\":\"2.0\",\"id\":13,\"result\":{},\"error\":{\"code\":1,\"message\":\"m\"}}"),
                Arguments.of("response whose error is a string", "{\"jsonrpc\":\"2.0\",\"id\":13,\"error\":\"bad\"}"),
                Arguments.of("response whose error code is a string", "{\"jsonrpc\":\"2.0\",\"id\":13,\"error\":{\"code\":\"x\",\"message\":\"m\"}}"));
    }
}
