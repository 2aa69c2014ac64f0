package dev.berth.mcp.http;

import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.HexFormat;

/**
 * {@code GET /metrics}: the Prometheus text exposition of the server's meters, for the operator's scraper only. The
 * scrape token is the operator's, configured as its SHA-256 ({@code metrics.token_sha256}) and compared in constant
 * time; tenant tokens are not accepted (metrics describe every tenant's workload). Thread-safe.
 */
final class MetricsServlet extends HttpServlet {
    private final PrometheusMeterRegistry registry;
    private final byte[] tokenHash;

    MetricsServlet(PrometheusMeterRegistry registry, String tokenSha256) {
        this.registry = registry;
        this.tokenHash = HexFormat.of().parseHex(tokenSha256);
    }

    @Override
    protected void doGet(HttpServletRequest req, HttpServletResponse resp) throws IOException {
        String auth = req.getHeader("Authorization");
        String token = auth != null && auth.regionMatches(true, 0, "Bearer ", 0, 7) ? auth.substring(7).strip() : null;
        if (token == null || !MessageDigest.isEqual(StaticTokens.sha256(token), tokenHash)) {
            resp.setHeader("WWW-Authenticate", "Bearer realm=\"berth-metrics\"");
            Responses.error(resp, HttpServletResponse.SC_UNAUTHORIZED, "invalid_token",
                    "metrics need the operator's scrape token (metrics.token_sha256 in the operator config); tenant tokens do not open them");
            return;
        }
        resp.setStatus(HttpServletResponse.SC_OK);
        resp.setContentType("text/plain; version=0.0.4; charset=utf-8");
        resp.getOutputStream().write(registry.scrape().getBytes(StandardCharsets.UTF_8));
    }
}
