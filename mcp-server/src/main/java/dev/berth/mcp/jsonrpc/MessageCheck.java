package dev.berth.mcp.jsonrpc;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import tools.jackson.core.JacksonException;
import tools.jackson.core.TokenStreamLocation;
import tools.jackson.databind.DeserializationFeature;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Decides whether one inbound message may go to the SDK: valid UTF-8 (a leading byte order mark is dropped), nested at
 * most {@link WireLimits#MAX_DEPTH} deep (counted on the bytes, before parsing), one JSON object (no batches), a
 * JSON-RPC 2.0 request, notification or response with a string or integer id, params an object, and the params of the
 * methods Berth serves shaped as MCP defines them (so the SDK never has to report a type error in its own words).
 * Stateless and thread-safe.
 */
public final class MessageCheck {
    private static final JsonMapper JSON = JsonMapper.builder()
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS).build();

    /** What the check found. */
    public sealed interface Result permits Accepted, Refusal {}

    /**
     * A message for the SDK.
     *
     * @param id     Long or String for a request or response, null for a notification
     * @param method null for a response
     */
    public record Accepted(JsonNode message, Object id, String method) implements Result {
        public boolean isRequest() { return method != null && id != null; }
        public boolean isNotification() { return method != null && id == null; }
        public boolean isResponse() { return method == null; }
    }

    private MessageCheck() {}

    /**
     * Whether a well-formed notification is acknowledged and dropped instead of reaching the SDK. Berth uses no
     * roots, but the SDK answers {@code notifications/roots/list_changed} by sending the client a {@code roots/list}
     * request and waiting for it: on Streamable HTTP without a standalone stream that is a 500, on legacy SSE a POST
     * that hangs until the request times out (both found by {@code JsonRpcFuzzE2eTest}).
     */
    public static boolean ignored(Accepted message) {
        return message.isNotification() && "notifications/roots/list_changed".equals(message.method());
    }

    /** Checks {@code len} bytes of {@code buf} from 0 as one complete message. */
    public static Result check(byte[] buf, int len) {
        int start = len >= 3 && (buf[0] & 0xff) == 0xEF && (buf[1] & 0xff) == 0xBB && (buf[2] & 0xff) == 0xBF ? 3 : 0;
        String text;
        try {
            text = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(buf, start, len - start)).toString();
        } catch (CharacterCodingException e) {
            return Refusal.of(null, Refusal.PARSE_ERROR, "the message is not valid UTF-8 text");
        }
        int depth = maxDepth(buf, start, len);
        if (depth > WireLimits.MAX_DEPTH) {
            return Refusal.of(null, Refusal.INVALID_REQUEST, "the message nests arrays and objects more than "
                    + WireLimits.MAX_DEPTH + " levels deep");
        }
        JsonNode msg;
        try {
            msg = JSON.readTree(text);
        } catch (JacksonException e) {
            TokenStreamLocation at = e.getLocation();
            String where = at == null || at.getColumnNr() < 1 ? "" : " (at character " + at.getColumnNr() + ")";
            return Refusal.of(null, Refusal.PARSE_ERROR, "the message is not valid JSON" + where);
        }
        if (msg == null || msg.isMissingNode()) return Refusal.of(null, Refusal.PARSE_ERROR, "the message is empty");
        if (msg.isArray()) {
            return Refusal.of(null, Refusal.INVALID_REQUEST, "batches (JSON arrays of messages) are not supported; send one message at a time");
        }
        if (!msg.isObject()) {
            return Refusal.of(null, Refusal.INVALID_REQUEST, "a JSON-RPC message is a JSON object, this is " + kind(msg));
        }
        return checkObject(msg);
    }

    private static Result checkObject(JsonNode msg) {
        JsonNode idNode = msg.get("id");
        boolean hasId = idNode != null;
        Object id = Refusal.idValue(idNode);
        JsonNode method = msg.get("method");
        boolean response = method == null && (msg.has("result") || msg.has("error"));
        if (hasId && id == null) {
            if (response) return new Refusal(null, Refusal.INVALID_REQUEST, "response with an invalid id", false);
            return Refusal.of(null, Refusal.INVALID_REQUEST, "id must be a string or an integer, this one is " + kind(idNode));
        }
        if (!"2.0".equals(msg.path("jsonrpc").asString(null)) || !msg.get("jsonrpc").isString()) {
            if (response) return new Refusal(id, Refusal.INVALID_REQUEST, "response without \"jsonrpc\": \"2.0\"", false);
            return Refusal.of(idNode, Refusal.INVALID_REQUEST, "\"jsonrpc\": \"2.0\" is missing; every message must carry it");
        }
        if (response) {
            if (!hasId) return new Refusal(null, Refusal.INVALID_REQUEST, "response without an id", false);
            JsonNode result = msg.get("result");
            JsonNode error = msg.get("error");
            boolean hasResult = result != null && !result.isNull();
            boolean hasError = error != null && !error.isNull();
            if (hasResult == hasError) {
                return new Refusal(id, Refusal.INVALID_REQUEST, "a response carries exactly one of result and error", false);
            }
            if (hasError && (!error.isObject() || !error.path("code").isIntegralNumber() || !error.path("code").canConvertToInt()
                    || !error.path("message").isString())) {
                return new Refusal(id, Refusal.INVALID_REQUEST, "a response's error is an object with an integer code and a string message", false);
            }
            return new Accepted(msg, id, null);
        }
        if (method == null) {
            return Refusal.of(idNode, Refusal.INVALID_REQUEST, "the message has no \"method\" (nor a result or error, as a response would)");
        }
        if (!method.isString() || method.asString().isEmpty()) {
            return Refusal.of(idNode, Refusal.INVALID_REQUEST, "\"method\" must be a non-empty string, this one is " + kind(method));
        }
        String name = method.asString();
        if (hasId && name.startsWith("notifications/")) {
            return Refusal.of(idNode, Refusal.INVALID_REQUEST, "'" + name + "' is a notification and must not carry an id");
        }
        String bad = params(name, msg.get("params"));
        if (bad != null) {
            // JSON-RPC never answers a notification, not even with an error
            return new Refusal(id, Refusal.INVALID_PARAMS, "invalid params for '" + name + "': " + bad, hasId);
        }
        return new Accepted(msg, id, name);
    }

    /** What is wrong with the params of {@code method}, or null when nothing is. */
    private static String params(String method, JsonNode params) {
        if (params == null) {
            return REQUIRE_PARAMS.contains(method) ? "params are required" : null;
        }
        if (!params.isObject()) return "params must be an object, not " + kind(params);
        String meta = field(params, "_meta", Type.OBJECT, false);
        if (meta != null) return meta;
        JsonNode token = params.path("_meta").get("progressToken");
        if (token != null && Refusal.idValue(token) == null) return "_meta.progressToken must be a string or an integer";
        return switch (method) {
            case "initialize" -> first(field(params, "protocolVersion", Type.STRING, true),
                    field(params, "capabilities", Type.OBJECT, false),
                    field(params.path("capabilities"), "roots", Type.OBJECT, false),
                    field(params.path("capabilities"), "sampling", Type.OBJECT, false),
                    field(params.path("capabilities"), "elicitation", Type.OBJECT, false),
                    field(params.path("capabilities"), "experimental", Type.OBJECT, false),
                    field(params.path("capabilities"), "extensions", Type.OBJECT, false),
                    field(params, "clientInfo", Type.OBJECT, true),
                    field(params.path("clientInfo"), "name", Type.STRING, true),
                    field(params.path("clientInfo"), "version", Type.STRING, false));
            case "tools/call" -> first(field(params, "name", Type.STRING, true), field(params, "arguments", Type.OBJECT, false));
            case "tools/list", "resources/list", "prompts/list" -> field(params, "cursor", Type.STRING, false);
            case "logging/setLevel" -> {
                String level = params.path("level").asString(null);
                yield params.path("level").isString() && LEVELS.contains(level) ? null : "level must be one of " + LEVELS;
            }
            case "notifications/cancelled" -> {
                JsonNode rid = params.get("requestId");
                if (rid == null || Refusal.idValue(rid) == null) yield "requestId must be a string or an integer";
                yield field(params, "reason", Type.STRING, false);
            }
            default -> null;
        };
    }

    /** Methods whose params MCP requires (logging/setLevel without them was found by JsonRpcFuzzE2eTest: an SDK NPE). */
    private static final java.util.Set<String> REQUIRE_PARAMS =
            java.util.Set.of("initialize", "tools/call", "logging/setLevel", "notifications/cancelled");

    private static final java.util.List<String> LEVELS =
            java.util.List.of("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency");

    private enum Type { STRING, OBJECT }

    private static String field(JsonNode obj, String name, Type type, boolean required) {
        JsonNode v = obj.get(name);
        if (v == null) return required ? name + " is required" : null;
        boolean ok = type == Type.STRING ? v.isString() : v.isObject();
        return ok ? null : name + " must be " + (type == Type.STRING ? "a string" : "an object") + ", not " + kind(v);
    }

    private static String first(String... problems) {
        for (String p : problems) if (p != null) return p;
        return null;
    }

    private static final Map<tools.jackson.databind.node.JsonNodeType, String> KINDS = Map.of(
            tools.jackson.databind.node.JsonNodeType.ARRAY, "an array", tools.jackson.databind.node.JsonNodeType.OBJECT, "an object",
            tools.jackson.databind.node.JsonNodeType.STRING, "a string", tools.jackson.databind.node.JsonNodeType.NUMBER, "a number",
            tools.jackson.databind.node.JsonNodeType.BOOLEAN, "a boolean", tools.jackson.databind.node.JsonNodeType.NULL, "null");

    private static String kind(JsonNode n) {
        if (n.isNumber() && !n.isIntegralNumber()) return "a fractional number";
        return KINDS.getOrDefault(n.getNodeType(), "something else");
    }

    /** Deepest nesting of [ and { outside strings; linear, no allocation. */
    static int maxDepth(byte[] b, int from, int to) {
        int depth = 0;
        int max = 0;
        boolean inString = false;
        for (int i = from; i < to; i++) {
            byte c = b[i];
            if (inString) {
                if (c == '\\') i++;
                else if (c == '"') inString = false;
            } else if (c == '"') {
                inString = true;
            } else if (c == '[' || c == '{') {
                if (++depth > max) max = depth;
                if (max > WireLimits.MAX_DEPTH) return max;
            } else if (c == ']' || c == '}') {
                depth--;
            }
        }
        return max;
    }
}
