package dev.berth.mcp.http;

import java.io.IOException;
import java.io.Writer;
import org.apache.catalina.connector.Request;
import org.apache.catalina.connector.Response;
import org.apache.catalina.valves.ErrorReportValve;

/**
 * Tomcat's error page replaced by a small JSON body naming the status in Berth's words: no stack trace, no server
 * version, no text passed to {@code sendError} (which may be an exception's message). Installed as the host's error
 * report valve. Thread-safe (stateless).
 */
public final class JsonErrorValve extends ErrorReportValve {
    @Override
    protected void report(Request request, Response response, Throwable throwable) {
        int status = response.getStatus();
        if (status < 400 || response.getContentWritten() > 0 || !response.setErrorReported()) return;
        try {
            response.setContentType("application/json");
            response.setCharacterEncoding("UTF-8");
            response.setHeader("Cache-Control", "no-store");
            Writer w = response.getReporter();
            if (w != null) {
                w.write(Responses.JSON.writeValueAsString(java.util.Map.of("error", error(status), "error_description", reason(status))));
                response.finishResponse();
            }
        } catch (IOException | IllegalStateException e) {
            // the client is gone or the response is committed: nothing more to say
        }
    }

    static String error(int status) {
        return switch (status) {
            case 400 -> "invalid_request";
            case 401 -> "invalid_token";
            case 403 -> "forbidden";
            case 404 -> "not_found";
            case 405 -> "method_not_allowed";
            case 413 -> "request_too_large";
            case 503 -> "unavailable";
            default -> status >= 500 ? "server_error" : "request_error";
        };
    }

    static String reason(int status) {
        return switch (status) {
            case 400 -> "the request is malformed for this endpoint";
            case 401 -> "a valid bearer token is required";
            case 403 -> "this request is not allowed";
            case 404 -> "nothing here: MCP is served at /mcp (Streamable HTTP) and /sse (legacy HTTP+SSE), and a session id"
                    + " that is unknown or closed is not found either";
            case 405 -> "this HTTP method is not supported here";
            case 406 -> "the Accept header must allow application/json and text/event-stream";
            case 413 -> "the request body is too large";
            case 503 -> "the server is shutting down";
            default -> status >= 500 ? "internal error; the server log has the details" : "the request was refused (HTTP " + status + ")";
        };
    }
}
