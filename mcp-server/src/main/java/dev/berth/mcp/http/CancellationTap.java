package dev.berth.mcp.http;

import dev.berth.engine.api.Tenant;
import dev.berth.mcp.tools.Cancellations;
import dev.berth.mcp.jsonrpc.MessageCheck;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpFilter;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import tools.jackson.databind.JsonNode;

/**
 * Looks at each JSON-RPC message POSTed to the MCP endpoints (as {@link JsonRpcGuard} read and checked it) before the
 * SDK does (the SDK 2.1.0 ignores {@code notifications/cancelled}). A request gets a cancellation key (tenant, transport session, request id) that
 * travels to the tool handler in the transport context; a cancellation notification cancels the call with the same
 * key. The body is handed on unchanged.
 */
final class CancellationTap extends HttpFilter {
    private final Cancellations cancellations;

    CancellationTap(Cancellations cancellations) {
        this.cancellations = cancellations;
    }

    @Override
    protected void doFilter(HttpServletRequest req, HttpServletResponse resp, FilterChain chain) throws IOException, ServletException {
        if ("POST".equals(req.getMethod()) && req.getAttribute(CallContext.TENANT) instanceof Tenant tenant
                && req.getAttribute(JsonRpcGuard.ACCEPTED) instanceof MessageCheck.Accepted msg) {
            // Streamable HTTP names the session in a header, the legacy SSE transport in the query string
            String channel = req.getHeader("Mcp-Session-Id") != null ? "mcp:" + req.getHeader("Mcp-Session-Id")
                    : "sse:" + req.getParameter("sessionId");
            inspect(msg, tenant, channel, req);
        }
        chain.doFilter(req, resp);
    }

    private void inspect(MessageCheck.Accepted msg, Tenant tenant, String channel, HttpServletRequest req) {
        if (msg.isRequest()) {
            req.setAttribute(CallContext.CALL_KEY, CallContext.key(tenant, channel, idText(msg.message().get("id"))));
        } else if (msg.isNotification() && "notifications/cancelled".equals(msg.method())) {
            JsonNode params = msg.message().path("params");
            // MessageCheck made sure requestId is a string or an integer
            cancellations.cancel(CallContext.key(tenant, channel, idText(params.get("requestId"))), params.path("reason").asString(null));
        }
    }

    /** Numbers and strings are distinct ids in JSON-RPC: 1 and "1" must not cancel each other's call. */
    private static String idText(JsonNode id) {
        return id.isNumber() ? "n:" + id.asString() : "s:" + id.asString();
    }
}
