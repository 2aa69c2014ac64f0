package dev.berth.mcp.jsonrpc;

import io.modelcontextprotocol.spec.McpSchema.JSONRPCResponse;
import io.modelcontextprotocol.spec.McpSchema.JSONRPCResponse.JSONRPCError;
import java.util.regex.Pattern;

/**
 * Rewrites the SDK's own error replies into Berth's words before they leave: the SDK puts exception messages into
 * {@code message} and their chain into {@code data}. A method-not-found or invalid-params reply keeps its message when
 * it names no Java internals; anything else becomes "internal error while handling 'METHOD'" and the original is
 * logged to stderr. {@code data} is always dropped. Stateless and thread-safe.
 */
public final class ErrorReplies {
    private static final System.Logger LOG = System.getLogger("berth.jsonrpc");
    private static final Pattern INTERNALS = Pattern.compile(
            "Exception|Error:|\\bat [a-z]+\\.|tools\\.jackson|com\\.fasterxml|io\\.modelcontextprotocol|java\\.|jakarta\\.|"
                    + "org\\.apache|dev\\.berth|reactor\\.|Cannot (de)?serialize|Unrecognized|\\[Source:|line: \\d+, column: \\d+");

    /** Jackson's words for params of the right outline with a field of the wrong type. */
    private static final Pattern TYPE_MISMATCH = Pattern.compile("MismatchedInput|InvalidFormat|Cannot construct instance|Cannot deserialize");

    private ErrorReplies() {}

    /** Whether an error text names Java internals (exception classes, packages, parser positions) or is too long to be a reason. */
    public static boolean looksInternal(String message) {
        return message.length() > 500 || INTERNALS.matcher(message).find();
    }

    /** The response to send in place of {@code r}: itself unless it is an error reply that needs rewording. */
    public static JSONRPCResponse clean(JSONRPCResponse r, String method) {
        JSONRPCError e = r.error();
        if (e == null) return r;
        String m = e.message() == null ? "" : e.message();
        Integer code = e.code();
        String text;
        if (code != null && code == Refusal.INVALID_PARAMS && e.data() instanceof String d && d.startsWith("Tool not found: ")
                && !looksInternal(d)) {
            // the SDK's message is the placeholder "Unknown tool: invalid_tool_name"; its data names the tool
            text = "unknown tool '" + d.substring("Tool not found: ".length()) + "': tools/list names this server's tools";
        } else if (code != null && code == -32601) {
            text = "method '" + (method == null ? "?" : method) + "' is not offered by this server";
        } else if (code != null && (code == Refusal.INVALID_PARAMS || code == Refusal.INVALID_REQUEST) && !m.isBlank()
                && !looksInternal(m)) {
            if (e.data() == null) return r;
            text = m;
        } else if (TYPE_MISMATCH.matcher(m + " " + e.data()).find()) {
            code = Refusal.INVALID_PARAMS;
            text = "invalid params for '" + (method == null ? "?" : method) + "': a field has the wrong type for MCP's schema of them";
        } else {
            LOG.log(System.Logger.Level.WARNING, "error reply to '" + method + "' reworded; the SDK said: " + m
                    + (e.data() == null ? "" : " / " + e.data()));
            code = Refusal.INTERNAL_ERROR;
            text = "internal error while handling '" + (method == null ? "?" : method) + "'; the server log has the details";
        }
        return new JSONRPCResponse(r.jsonrpc(), r.id(), null, new JSONRPCError(code, text, null));
    }
}
