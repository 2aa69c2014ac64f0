package dev.berth.mcp.jsonrpc;

import java.util.LinkedHashMap;
import java.util.Map;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * A message Berth will not hand to the SDK, and the JSON-RPC error that answers it.
 *
 * @param id     the request's id when it could be read, else null (the error then carries {@code "id": null})
 * @param code   a JSON-RPC error code: {@link #PARSE_ERROR}, {@link #INVALID_REQUEST} or {@link #INVALID_PARAMS}
 * @param reason what was wrong, in Berth's words; never an exception text
 * @param answer false for a message that must not be answered (a malformed response sent to the server)
 */
public record Refusal(Object id, int code, String reason, boolean answer) implements MessageCheck.Result {
    public static final int PARSE_ERROR = -32700;
    public static final int INVALID_REQUEST = -32600;
    public static final int INVALID_PARAMS = -32602;
    public static final int INTERNAL_ERROR = -32603;
    private static final JsonMapper JSON = JsonMapper.builder().build();

    static Refusal of(JsonNode id, int code, String reason) {
        return new Refusal(idValue(id), code, reason, true);
    }

    /** A valid JSON-RPC id as a Java value (Long or String), or null. */
    static Object idValue(JsonNode id) {
        if (id == null) return null;
        if (id.isString()) return id.asString();
        if (id.isIntegralNumber() && id.canConvertToLong()) return id.asLong();
        return null;
    }

    /** The error response as one line of JSON (no newline). */
    public String toJson() {
        return errorJson(id, code, reason);
    }

    /** A JSON-RPC error response as one line of JSON (no newline). */
    public static String errorJson(Object id, int code, String message) {
        Map<String, Object> error = new LinkedHashMap<>();
        error.put("code", code);
        error.put("message", message);
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("jsonrpc", "2.0");
        m.put("id", id);
        m.put("error", error);
        return JSON.writeValueAsString(m);
    }
}
