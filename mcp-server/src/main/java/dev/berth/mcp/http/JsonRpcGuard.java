package dev.berth.mcp.http;

import dev.berth.mcp.jsonrpc.ErrorReplies;
import dev.berth.mcp.jsonrpc.LineReader;
import dev.berth.mcp.jsonrpc.MessageCheck;
import dev.berth.mcp.jsonrpc.Refusal;
import dev.berth.mcp.jsonrpc.WireLimits;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.ServletOutputStream;
import jakarta.servlet.WriteListener;
import jakarta.servlet.http.HttpFilter;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import jakarta.servlet.http.HttpServletResponseWrapper;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.io.SequenceInputStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;

/**
 * The JSON-RPC boundary of the HTTP transports, in front of the SDK's servlets. A POSTed body is read up to
 * {@link WireLimits#MAX_MESSAGE_BYTES} (a longer one is read to its end, discarded and refused with 413) and checked by
 * {@link MessageCheck}; a refused message is answered here with a JSON-RPC error, and the SDK sees only messages that
 * passed (as {@link CachedBody}, with the check's verdict in {@link #ACCEPTED}). Error bodies the SDK writes itself
 * (it serializes whole exceptions, stack trace included) are replaced by a JSON-RPC error in Berth's words.
 *
 * <p>A JSON-RPC response from the client is acknowledged (202) and dropped: Berth sends clients no requests. A
 * refused request with an id on {@code /mcp} gets HTTP 200 with the error, so the client's pending call fails
 * with the reason; everything else refused gets 400 (413 for size) with the error as body, as Streamable HTTP asks.
 * On the legacy {@code /message} endpoint answers normally travel on the SSE stream, so refusals are 400 there.
 * Thread-safe (stateless).
 */
final class JsonRpcGuard extends HttpFilter {
    /** Request attribute: the {@link MessageCheck.Accepted} verdict of the body. */
    static final String ACCEPTED = "berth.jsonrpc.accepted";

    @Override
    protected void doFilter(HttpServletRequest req, HttpServletResponse resp, FilterChain chain) throws IOException, ServletException {
        SdkErrorBodies wrapped = new SdkErrorBodies(resp);
        if (!"POST".equals(req.getMethod())) {
            chain.doFilter(req, wrapped);
            wrapped.finish();
            return;
        }
        InputStream in = req.getInputStream();
        byte[] body = in.readNBytes(WireLimits.MAX_MESSAGE_BYTES + 1);
        if (body.length > WireLimits.MAX_MESSAGE_BYTES) {
            long[] total = {body.length};
            InputStream counted = new InputStream() {
                @Override public int read() throws IOException {
                    int b = in.read();
                    if (b >= 0) total[0]++;
                    return b;
                }
                @Override public int read(byte[] b, int off, int len) throws IOException {
                    int n = in.read(b, off, len);
                    if (n > 0) total[0] += n;
                    return n;
                }
            };
            Object id = LineReader.topLevelId(new SequenceInputStream(new ByteArrayInputStream(body), counted));
            counted.transferTo(OutputStreamNull.INSTANCE);
            refuse(resp, 413, Refusal.errorJson(id, Refusal.INVALID_REQUEST, "message of " + total[0] + " bytes refused: at most "
                    + WireLimits.MAX_MESSAGE_BYTES + " bytes per message (for larger files, write_file with append: true in parts)"));
            return;
        }
        switch (MessageCheck.check(body, body.length)) {
            case Refusal r -> {
                boolean inBand = r.answer() && r.id() != null && req.getServletPath().equals(HttpServer.MCP);
                refuse(resp, inBand ? 200 : 400, r.toJson());
            }
            case MessageCheck.Accepted a when MessageCheck.ignored(a) -> resp.setStatus(HttpServletResponse.SC_ACCEPTED);
            case MessageCheck.Accepted a when a.isResponse() -> {
                // Berth sends clients no requests, so a response answers none; the SDK's Streamable HTTP transport
                // would call that a server error (500)
                System.getLogger("berth.jsonrpc").log(System.Logger.Level.INFO, "dropped a response to request id " + a.id()
                        + ": this server sends clients no requests");
                resp.setStatus(HttpServletResponse.SC_ACCEPTED);
            }
            case MessageCheck.Accepted a -> {
                req.setAttribute(ACCEPTED, a);
                byte[] clean = body.length >= 3 && (body[0] & 0xff) == 0xEF ? Arrays.copyOfRange(body, 3, body.length) : body;
                chain.doFilter(new CachedBody(req, clean), wrapped);
                wrapped.finish();
            }
        }
    }

    private static void refuse(HttpServletResponse resp, int status, String json) throws IOException {
        resp.setStatus(status);
        resp.setContentType("application/json");
        resp.setCharacterEncoding("UTF-8");
        resp.setHeader("Cache-Control", "no-store");
        resp.getWriter().write(json);
    }

    private static final class OutputStreamNull extends java.io.OutputStream {
        static final OutputStreamNull INSTANCE = new OutputStreamNull();
        @Override public void write(int b) {}
        @Override public void write(byte[] b, int off, int len) {}
    }

    /**
     * Holds back a body the SDK writes with an error status (400 and up) and sends a JSON-RPC error in its place:
     * the code is kept when the SDK gave one, the message is Berth's. Bodies with a success status (SSE streams,
     * results) pass straight through.
     */
    private static final class SdkErrorBodies extends HttpServletResponseWrapper {
        private ByteArrayOutputStream held;
        private PrintWriter writer;

        SdkErrorBodies(HttpServletResponse resp) { super(resp); }

        private boolean holding() {
            return getStatus() >= 400;
        }

        @Override
        public ServletOutputStream getOutputStream() throws IOException {
            if (!holding()) return super.getOutputStream();
            if (held == null) held = new ByteArrayOutputStream();
            return new ServletOutputStream() {
                @Override public void write(int b) { held.write(b); }
                @Override public void write(byte[] b, int off, int len) { held.write(b, off, len); }
                @Override public boolean isReady() { return true; }
                @Override public void setWriteListener(WriteListener l) { throw new UnsupportedOperationException("blocking writes only"); }
            };
        }

        @Override
        public PrintWriter getWriter() throws IOException {
            if (!holding()) return super.getWriter();
            if (writer == null) writer = new PrintWriter(new OutputStreamWriter(getOutputStream(), StandardCharsets.UTF_8));
            return writer;
        }

        void finish() throws IOException {
            if (held == null) return;
            if (writer != null) writer.flush();
            int code = Refusal.INVALID_REQUEST;
            int status = getStatus();
            String message = JsonErrorValve.reason(status);
            try {
                JsonNode sdk = Responses.JSON.readTree(held.toByteArray()).path("jsonRpcError");
                if (sdk.path("code").isIntegralNumber()) code = sdk.path("code").asInt();
                String said = sdk.path("message").asString("");
                if (!said.isBlank() && !ErrorReplies.looksInternal(said)) message = said;
            } catch (JacksonException e) {
                // not JSON: keep the defaults
            }
            HttpServletResponse resp = (HttpServletResponse) getResponse();
            if (resp.isCommitted()) return;
            resp.resetBuffer();
            resp.setContentType("application/json");
            resp.setCharacterEncoding("UTF-8");
            resp.getWriter().write(Refusal.errorJson(null, code, message));
        }
    }
}
