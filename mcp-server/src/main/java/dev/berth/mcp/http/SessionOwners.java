package dev.berth.mcp.http;

import dev.berth.engine.api.Tenant;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpFilter;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import jakarta.servlet.http.HttpServletResponseWrapper;
import java.io.IOException;
import java.io.PrintWriter;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Binds every MCP transport session to the tenant that opened it. The SDK keys sessions by id alone, so without
 * this a tenant holding another tenant's session id could post into that session, listen on it or delete it. A
 * request naming a session its tenant did not open is answered 404, exactly like a session that does not exist.
 *
 * <p>The ids are learnt as the SDK hands them out: the {@code Mcp-Session-Id} response header of a Streamable HTTP
 * initialize, and the {@code sessionId} in the endpoint event that opens a legacy SSE stream. The table is bounded;
 * a session that falls out of it is refused (fail closed) and its client starts a new one, as MCP clients do on 404.
 */
final class SessionOwners extends HttpFilter {
    private static final System.Logger LOG = System.getLogger("berth.auth");
    private static final String HEADER = "Mcp-Session-Id";
    private static final Pattern SSE_SESSION = Pattern.compile("sessionId=([A-Za-z0-9-]+)");
    private static final int MAX_SESSIONS = 100_000;

    private final Map<String, String> owners = Collections.synchronizedMap(new LinkedHashMap<>(256, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, String> eldest) {
            return size() > MAX_SESSIONS;
        }
    });

    @Override
    protected void doFilter(HttpServletRequest req, HttpServletResponse resp, FilterChain chain) throws IOException, ServletException {
        Tenant tenant = (Tenant) req.getAttribute(CallContext.TENANT);
        String session = req.getHeader(HEADER) != null ? req.getHeader(HEADER)
                : req.getRequestURI().endsWith(HttpServer.MESSAGE) ? req.getParameter("sessionId") : null;
        if (session != null) {
            String owner = owners.get(session);
            if (!tenant.id().equals(owner)) {
                LOG.log(System.Logger.Level.INFO, "tenant '" + tenant.id() + "' named session " + session + ", which "
                        + (owner == null ? "is not known" : "belongs to another tenant") + "; answered 404");
                Responses.error(resp, 404, "session_not_found", "no MCP session '" + session + "'; initialize a new one");
                return;
            }
            chain.doFilter(req, resp);
            if ("DELETE".equals(req.getMethod()) && resp.getStatus() < 300) owners.remove(session);
            return;
        }
        if ("GET".equals(req.getMethod()) && req.getRequestURI().endsWith(HttpServer.SSE)) {
            chain.doFilter(req, new SseEndpointSniffer(resp, id -> owners.put(id, tenant.id())));
            return;
        }
        chain.doFilter(req, new HttpServletResponseWrapper(resp) {
            @Override
            public void setHeader(String name, String value) {
                if (HEADER.equalsIgnoreCase(name)) owners.put(value, tenant.id());
                super.setHeader(name, value);
            }

            @Override
            public void addHeader(String name, String value) {
                if (HEADER.equalsIgnoreCase(name)) owners.put(value, tenant.id());
                super.addHeader(name, value);
            }
        });
    }

    /** Reads the session id out of the first event of a legacy SSE stream ({@code data: /message?sessionId=...}). */
    private static final class SseEndpointSniffer extends HttpServletResponseWrapper {
        private final java.util.function.Consumer<String> onSession;
        private PrintWriter writer;

        SseEndpointSniffer(HttpServletResponse resp, java.util.function.Consumer<String> onSession) {
            super(resp);
            this.onSession = onSession;
        }

        @Override
        public PrintWriter getWriter() throws IOException {
            if (writer == null) {
                // a PrintWriter over the container's PrintWriter: checkError() still reports a vanished client
                writer = new PrintWriter(super.getWriter()) {
                    private final StringBuilder seen = new StringBuilder();
                    private boolean done;

                    @Override
                    public void write(String s, int off, int len) {
                        sniff(s.substring(off, off + len));
                        super.write(s, off, len);
                    }

                    @Override
                    public void write(char[] buf, int off, int len) {
                        sniff(new String(buf, off, len));
                        super.write(buf, off, len);
                    }

                    private void sniff(String s) {
                        if (done) return;
                        seen.append(s);
                        Matcher m = SSE_SESSION.matcher(seen);
                        if (m.find() && seen.indexOf("\n\n", m.end()) >= 0) {
                            onSession.accept(m.group(1));
                            done = true;
                        } else if (seen.length() > 4096) {
                            done = true; // not an endpoint event: nothing to learn
                        }
                    }
                };
            }
            return writer;
        }
    }
}
