package dev.berth.mcp.http;

import jakarta.servlet.http.HttpServletResponse;
import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.Map;
import tools.jackson.databind.json.JsonMapper;

/** Small JSON error bodies written by the filters: a code and a reason, never a stack trace. */
final class Responses {
    static final JsonMapper JSON = JsonMapper.builder().build();

    private Responses() {}

    static void error(HttpServletResponse resp, int status, String error, String description) throws IOException {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("error", error);
        body.put("error_description", description);
        json(resp, status, body);
    }

    static void json(HttpServletResponse resp, int status, Object body) throws IOException {
        resp.setStatus(status);
        resp.setContentType("application/json");
        resp.setCharacterEncoding("UTF-8");
        resp.setHeader("Cache-Control", "no-store");
        resp.getWriter().write(JSON.writeValueAsString(body));
    }
}
