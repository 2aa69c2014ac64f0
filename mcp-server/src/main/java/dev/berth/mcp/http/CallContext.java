package dev.berth.mcp.http;

import dev.berth.engine.api.Tenant;
import io.modelcontextprotocol.common.McpTransportContext;
import io.modelcontextprotocol.server.McpSyncServerExchange;
import io.modelcontextprotocol.server.McpTransportContextExtractor;
import jakarta.servlet.http.HttpServletRequest;
import java.util.HashMap;
import java.util.Map;

/**
 * Carries what the HTTP filters established about a request (its authenticated tenant, and which call it is) into
 * the SDK's transport context, where the tool handlers read it from the exchange.
 */
public final class CallContext {
    static final String TENANT = "berth.tenant";
    static final String CALL_KEY = dev.berth.mcp.tools.Cancellations.CONTEXT_KEY;

    private CallContext() {}

    /** For the SDK's servlet transports: copies the filters' request attributes into the transport context. */
    public static final McpTransportContextExtractor<HttpServletRequest> EXTRACTOR = request -> {
        Map<String, Object> m = new HashMap<>();
        if (request.getAttribute(TENANT) instanceof Tenant t) m.put(TENANT, t);
        if (request.getAttribute(CALL_KEY) instanceof String k) m.put(CALL_KEY, k);
        return McpTransportContext.create(m);
    };

    /**
     * The tenant a tool call is made for. Every HTTP request passed the authentication filter, so a missing tenant
     * is a wiring bug: fail closed rather than fall back to any default tenant.
     */
    public static Tenant tenant(McpSyncServerExchange exchange) {
        if (exchange.transportContext().get(TENANT) instanceof Tenant t) return t;
        throw new IllegalStateException("no authenticated tenant on this request");
    }

    static String key(Tenant tenant, String channel, Object jsonRpcId) {
        return tenant.id() + "|" + channel + "|" + jsonRpcId;
    }
}
