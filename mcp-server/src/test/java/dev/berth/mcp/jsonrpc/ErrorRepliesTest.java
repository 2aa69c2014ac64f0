package dev.berth.mcp.jsonrpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

import io.modelcontextprotocol.spec.McpSchema.JSONRPCResponse;
import io.modelcontextprotocol.spec.McpSchema.JSONRPCResponse.JSONRPCError;
import org.junit.jupiter.api.Test;

class ErrorRepliesTest {
    private static JSONRPCResponse err(int code, String message, Object data) {
        return new JSONRPCResponse("2.0", 1, null, new JSONRPCError(code, message, data));
    }

    @Test
    void clean_internalError_isRewordedAndLosesItsData() {
        JSONRPCResponse r = ErrorReplies.clean(err(-32603, "java.lang.NullPointerException: x", "at io.modelcontextprotocol..."), "tools/call");
        assertEquals(-32603, r.error().code());
        assertEquals("internal error while handling 'tools/call'; the server log has the details", r.error().message());
        assertNull(r.error().data());
    }

    @Test
    void clean_jacksonTypeMismatch_becomesInvalidParams() {
        JSONRPCResponse r = ErrorReplies.clean(err(-32603, "tools.jackson.databind.exc.MismatchedInputException: Cannot construct instance", null), "initialize");
        assertEquals(-32602, r.error().code());
        assertEquals("invalid params for 'initialize': a field has the wrong type for MCP's schema of them", r.error().message());
    }

    @Test
    void clean_unknownTool_namesTheToolInsteadOfTheSdkPlaceholder() {
        JSONRPCResponse r = ErrorReplies.clean(err(-32602, "Unknown tool: invalid_tool_name", "Tool not found: rm_rf"), "tools/call");
        assertEquals("unknown tool 'rm_rf': tools/list names this server's tools", r.error().message());
        assertNull(r.error().data());
    }

    @Test
    void clean_methodNotFound_namesTheMethod() {
        JSONRPCResponse r = ErrorReplies.clean(err(-32601, "Method not found: shutdown", null), "shutdown");
        assertEquals("method 'shutdown' is not offered by this server", r.error().message());
    }

    @Test
    void clean_plainInvalidParams_andResults_passUnchanged() {
        JSONRPCResponse plain = err(-32602, "cursor is not valid", null);
        assertSame(plain, ErrorReplies.clean(plain, "tools/list"));
        JSONRPCResponse ok = JSONRPCResponse.result(1, java.util.Map.of());
        assertSame(ok, ErrorReplies.clean(ok, "ping"));
    }
}
