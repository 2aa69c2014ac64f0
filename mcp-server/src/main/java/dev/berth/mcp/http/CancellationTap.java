package dev.berth.mcp.http;

import dev.berth.engine.Tenant;
import dev.berth.mcp.Cancellations;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ReadListener;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletInputStream;
import jakarta.servlet.http.HttpFilter;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletRequestWrapper;
import jakarta.servlet.http.HttpServletResponse;
import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;

/**
 * Reads each JSON-RPC message POSTed to the MCP endpoints before the SDK does (the SDK 2.1.0 ignores
 * {@code notifications/cancelled}). A request gets a cancellation key (tenant, transport session, request id) that
 * travels to the tool handler in the transport context; a cancellation notification cancels the call with the same
 * key. The body is handed on unchanged.
 */
final class CancellationTap extends HttpFilter {
    private final Cancellations cancellations;
    private final int maxBody;

    CancellationTap(Cancellations cancellations, int maxBody) {
        this.cancellations = cancellations;
        this.maxBody = maxBody;
    }

    @Override
    protected void doFilter(HttpServletRequest req, HttpServletResponse resp, FilterChain chain) throws IOException, ServletException {
        if (!"POST".equals(req.getMethod()) || !(req.getAttribute(CallContext.TENANT) instanceof Tenant tenant)) {
            chain.doFilter(req, resp);
            return;
        }
        byte[] body = req.getInputStream().readNBytes(maxBody + 1);
        if (body.length > maxBody) {
            Responses.error(resp, 413, "request_too_large", "a JSON-RPC message may be at most " + maxBody + " bytes");
            return;
        }
        // Streamable HTTP names the session in a header, the legacy SSE transport in the query string
        String channel = req.getHeader("Mcp-Session-Id") != null ? "mcp:" + req.getHeader("Mcp-Session-Id")
                : "sse:" + req.getParameter("sessionId");
        inspect(body, tenant, channel, req);
        chain.doFilter(new CachedBody(req, body), resp);
    }

    private void inspect(byte[] body, Tenant tenant, String channel, HttpServletRequest req) {
        JsonNode msg;
        try {
            msg = Responses.JSON.readTree(body);
        } catch (JacksonException e) {
            return; // the SDK answers malformed JSON itself
        }
        if (msg == null || !msg.isObject()) return;
        String method = msg.path("method").asString(null);
        JsonNode id = msg.get("id");
        if (method == null) return;
        if (id != null && !id.isNull()) {
            req.setAttribute(CallContext.CALL_KEY, CallContext.key(tenant, channel, idText(id)));
        } else if ("notifications/cancelled".equals(method)) {
            JsonNode rid = msg.path("params").get("requestId");
            if (rid != null && !rid.isNull()) {
                cancellations.cancel(CallContext.key(tenant, channel, idText(rid)), msg.path("params").path("reason").asString(null));
            }
        }
    }

    /** Numbers and strings are distinct ids in JSON-RPC: 1 and "1" must not cancel each other's call. */
    private static String idText(JsonNode id) {
        return id.isNumber() ? "n:" + id.asString() : "s:" + id.asString();
    }

    private static final class CachedBody extends HttpServletRequestWrapper {
        private final byte[] body;

        CachedBody(HttpServletRequest req, byte[] body) {
            super(req);
            this.body = body;
        }

        @Override
        public ServletInputStream getInputStream() {
            ByteArrayInputStream in = new ByteArrayInputStream(body);
            return new ServletInputStream() {
                @Override public int read() { return in.read(); }
                @Override public int read(byte[] b, int off, int len) { return in.read(b, off, len); }
                @Override public boolean isFinished() { return in.available() == 0; }
                @Override public boolean isReady() { return true; }
                @Override public void setReadListener(ReadListener l) { throw new UnsupportedOperationException("blocking reads only"); }
            };
        }

        @Override
        public BufferedReader getReader() {
            String enc = getCharacterEncoding();
            var cs = enc == null ? StandardCharsets.UTF_8 : java.nio.charset.Charset.forName(enc);
            return new BufferedReader(new InputStreamReader(getInputStream(), cs));
        }

        @Override
        public int getContentLength() { return body.length; }

        @Override
        public long getContentLengthLong() { return body.length; }
    }
}
