package dev.berth.mcp.http;

import io.modelcontextprotocol.server.transport.DefaultServerTransportSecurityValidator;
import io.modelcontextprotocol.server.transport.ServerTransportSecurityException;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpFilter;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.util.List;
import java.util.Map;

/**
 * DNS-rebinding protection, first in line for every path: a request whose Host or Origin is not on the operator's
 * lists is refused (Host: 421 Misdirected Request, Origin: 403) before authentication or any MCP handling. The
 * matching rules are the SDK's own validator's (exact value, or {@code name:*} for any port).
 */
final class HostOriginFilter extends HttpFilter {
    private final DefaultServerTransportSecurityValidator validator;

    HostOriginFilter(List<String> allowedOrigins, List<String> allowedHosts) {
        this.validator = DefaultServerTransportSecurityValidator.builder()
                .allowedOrigins(allowedOrigins).allowedHosts(allowedHosts).build();
    }

    @Override
    protected void doFilter(HttpServletRequest req, HttpServletResponse resp, FilterChain chain) throws IOException, ServletException {
        String host = req.getHeader("Host");
        String origin = req.getHeader("Origin");
        try {
            Map<String, List<String>> h = new java.util.HashMap<>();
            h.put("Host", host == null ? List.of() : List.of(host));
            if (origin != null) h.put("Origin", List.of(origin));
            validator.validateHeaders(h);
        } catch (ServerTransportSecurityException e) {
            boolean hostProblem = e.getStatusCode() == 421;
            String value = hostProblem ? host : origin;
            Responses.error(resp, e.getStatusCode(), hostProblem ? "invalid_host" : "invalid_origin",
                    (hostProblem ? "Host" : "Origin") + " '" + value + "' is not allowed by this server (http."
                            + (hostProblem ? "allowed_hosts" : "allowed_origins") + " in the operator config)");
            return;
        }
        chain.doFilter(req, resp);
    }
}
