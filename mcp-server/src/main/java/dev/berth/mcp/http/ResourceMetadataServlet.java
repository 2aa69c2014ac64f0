package dev.berth.mcp.http;

import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** OAuth 2.0 Protected Resource Metadata (RFC 9728): which authorization server issues tokens for this server. */
final class ResourceMetadataServlet extends HttpServlet {
    private final Map<String, Object> metadata = new LinkedHashMap<>();

    ResourceMetadataServlet(String resource, String issuer) {
        metadata.put("resource", resource);
        // static-token-only deployments have no authorization server; the field is then left out, not invented
        if (issuer != null) metadata.put("authorization_servers", List.of(issuer));
        metadata.put("bearer_methods_supported", List.of("header"));
        metadata.put("resource_name", "Berth");
    }

    @Override
    protected void doGet(HttpServletRequest req, HttpServletResponse resp) throws IOException {
        Responses.json(resp, 200, metadata);
    }
}
