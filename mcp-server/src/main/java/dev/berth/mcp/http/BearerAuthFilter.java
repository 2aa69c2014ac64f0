package dev.berth.mcp.http;

import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpFilter;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;

/**
 * Authenticates every MCP request (RFC 6750 bearer tokens) and records its tenant for the tool handlers. A refusal
 * points the client at the protected resource metadata (RFC 9728 §5.1), where it finds the authorization server.
 */
final class BearerAuthFilter extends HttpFilter {
    private static final System.Logger LOG = System.getLogger("berth.auth");
    private final BearerAuthenticator auth;
    private final String resourceMetadataUrl;

    BearerAuthFilter(BearerAuthenticator auth, String resourceMetadataUrl) {
        this.auth = auth;
        this.resourceMetadataUrl = resourceMetadataUrl;
    }

    @Override
    protected void doFilter(HttpServletRequest req, HttpServletResponse resp, FilterChain chain) throws IOException, ServletException {
        switch (auth.authenticate(req.getHeader("Authorization"))) {
            case AuthResult.Granted g -> {
                req.setAttribute(CallContext.TENANT, g.tenant());
                chain.doFilter(req, resp);
            }
            case AuthResult.Denied d -> {
                LOG.log(System.Logger.Level.INFO, "refused " + req.getMethod() + " " + req.getRequestURI() + " from "
                        + req.getRemoteAddr() + ": " + d.description());
                StringBuilder challenge = new StringBuilder("Bearer resource_metadata=\"").append(resourceMetadataUrl).append('"');
                if (d.error() != null) {
                    challenge.append(", error=\"").append(d.error()).append("\", error_description=\"")
                            .append(d.description().replace("\\", "\\\\").replace("\"", "'")).append('"');
                }
                resp.setHeader("WWW-Authenticate", challenge.toString());
                Responses.error(resp, d.status(), d.error() == null ? "unauthorized" : d.error(), d.description());
            }
        }
    }
}
