package dev.berth.mcp.preview;

import dev.berth.engine.api.PortExposure;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpRequest;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * The request heads the preview listener writes (to the app, to the MCP endpoint behind it), its own short answers,
 * and the header checks and parsing they rest on. Stateless: every input is a parameter.
 */
final class HttpHeads {
    /** Hop-by-hop headers: never passed on. */
    private static final Set<String> HOP = Set.of("keep-alive", "proxy-connection", "proxy-authorization", "te", "trailer");

    private HttpHeads() {}

    /**
     * Why the head is ambiguous about where the body ends or which host it is for (the request smuggling shapes: TE
     * and CL together, several CL, a TE other than {@code chunked}, several Host), or null when it is not.
     */
    static String ambiguity(HttpHeaders h) {
        List<String> te = h.getAll(HttpHeaderNames.TRANSFER_ENCODING);
        List<String> cl = h.getAll(HttpHeaderNames.CONTENT_LENGTH);
        if (!te.isEmpty() && !cl.isEmpty()) return "request has both Transfer-Encoding and Content-Length (a request smuggling shape); send one";
        if (cl.size() > 1) return "request has " + cl.size() + " Content-Length headers";
        if (te.size() > 1 || (te.size() == 1 && !te.getFirst().trim().equalsIgnoreCase("chunked"))) {
            return "Transfer-Encoding must be exactly \"chunked\", got " + te;
        }
        if (h.getAll(HttpHeaderNames.HOST).size() > 1) return "request has several Host headers";
        return null;
    }

    /** The head relayed to the MCP endpoint: as received, hop-by-hop headers dropped, X-Forwarded-For set. */
    static byte[] backendHead(HttpRequest req, String remote) {
        StringBuilder sb = new StringBuilder(512);
        sb.append(req.method().name()).append(' ').append(req.uri()).append(" HTTP/1.1\r\n");
        for (Map.Entry<String, String> h : req.headers()) {
            String n = h.getKey().toLowerCase(Locale.ROOT);
            if (HOP.contains(n) || n.equals("x-forwarded-for")) continue;
            sb.append(h.getKey()).append(": ").append(h.getValue()).append("\r\n");
        }
        if (remote != null) sb.append("X-Forwarded-For: ").append(remote).append("\r\n");
        sb.append("\r\n");
        return sb.toString().getBytes(StandardCharsets.ISO_8859_1);
    }

    /** The Host the app sees ({@link PreviewServer.Settings#hostHeader()}, here {@code mode}). */
    static String appHost(String mode, HttpRequest req, int port) {
        if (mode == null || mode.equals(PreviewServer.Settings.LOCALHOST)) return "localhost:" + port;
        if (mode.equals(PreviewServer.Settings.PRESERVE)) {
            String h = req.headers().get(HttpHeaderNames.HOST);
            return h != null ? h : "localhost:" + port;
        }
        return mode;
    }

    /**
     * The request head as the app gets it: path without the prefix, Host rewritten (and Origin/Referer when they name
     * the preview's public origin), X-Forwarded-Host/Proto/For set, X-Forwarded-Prefix in the {@code /p/<id>} form.
     *
     * @param hostMode the listener's {@code host_header} setting
     * @param secure   whether browsers reach the listener over https
     * @param remote   the browser's address, or null
     */
    static byte[] appHead(HttpRequest req, PortExposure e, String rest, String prefix, String publicOrigin, String hostMode,
                          boolean secure, String remote) {
        StringBuilder sb = new StringBuilder(512);
        String path = stripParam(rest, "berth_token");
        if (path.isEmpty() || path.charAt(0) != '/') path = "/" + path;
        sb.append(req.method().name()).append(' ').append(path).append(" HTTP/1.1\r\n");
        String appHost = appHost(hostMode, req, e.port());
        String origHost = req.headers().get(HttpHeaderNames.HOST);
        boolean preserve = PreviewServer.Settings.PRESERVE.equals(hostMode);
        for (Map.Entry<String, String> h : req.headers()) {
            String n = h.getKey().toLowerCase(Locale.ROOT);
            if (HOP.contains(n) || n.equals("host") || n.startsWith("x-forwarded-") || n.equals("forwarded")) continue;
            String v = h.getValue();
            if (n.equals("authorization") && bearer(v) != null && e.access().equals(PortExposure.TENANT)) continue; // the tenant's token never reaches the app
            if (n.equals("cookie")) {
                v = dropCookie(v, PreviewHandler.COOKIE);
                if (v.isEmpty()) continue;
            }
            if (!preserve && n.equals("origin") && (v.equals(publicOrigin) || origHost != null && v.endsWith("://" + origHost))) v = "http://" + appHost;
            if (!preserve && n.equals("referer") && v.startsWith(publicOrigin + prefix + "/")) v = "http://" + appHost + v.substring((publicOrigin + prefix).length());
            sb.append(h.getKey()).append(": ").append(v).append("\r\n");
        }
        sb.append("Host: ").append(appHost).append("\r\n");
        if (origHost != null) sb.append("X-Forwarded-Host: ").append(origHost).append("\r\n");
        sb.append("X-Forwarded-Proto: ").append(secure ? "https" : "http").append("\r\n");
        if (!prefix.isEmpty()) sb.append("X-Forwarded-Prefix: ").append(prefix).append("\r\n");
        if (remote != null) sb.append("X-Forwarded-For: ").append(remote).append("\r\n");
        sb.append("\r\n");
        return sb.toString().getBytes(StandardCharsets.ISO_8859_1);
    }

    /** The listener's own answer: a plain-text reason, never cached; a 401 names the Bearer scheme. */
    static byte[] response(int status, String reason, Map<String, String> headers, boolean close) {
        byte[] body = (reason + "\n").getBytes(StandardCharsets.UTF_8);
        StringBuilder sb = new StringBuilder();
        sb.append("HTTP/1.1 ").append(status).append(' ').append(phrase(status)).append("\r\n");
        sb.append("Content-Type: text/plain; charset=utf-8\r\n");
        sb.append("Content-Length: ").append(body.length).append("\r\n");
        sb.append("Cache-Control: no-store\r\n");
        if (status == 401) sb.append("WWW-Authenticate: Bearer realm=\"berth preview\"\r\n");
        headers.forEach((k, v) -> sb.append(k).append(": ").append(v).append("\r\n"));
        if (close) sb.append("Connection: close\r\n");
        sb.append("\r\n");
        byte[] head = sb.toString().getBytes(StandardCharsets.UTF_8);
        byte[] out = new byte[head.length + body.length];
        System.arraycopy(head, 0, out, 0, head.length);
        System.arraycopy(body, 0, out, head.length, body.length);
        return out;
    }

    private static String phrase(int s) {
        return switch (s) {
            case 303 -> "See Other"; case 308 -> "Permanent Redirect"; case 400 -> "Bad Request"; case 401 -> "Unauthorized";
            case 404 -> "Not Found"; case 414 -> "URI Too Long"; case 431 -> "Request Header Fields Too Large";
            case 502 -> "Bad Gateway"; case 503 -> "Service Unavailable"; default -> "Error";
        };
    }

    static String bearer(String header) {
        if (header == null || !header.regionMatches(true, 0, "Bearer ", 0, 7)) return null;
        String t = header.substring(7).strip();
        return t.isEmpty() ? null : t;
    }

    static String cookie(HttpHeaders h, String name) {
        for (String line : h.getAll(HttpHeaderNames.COOKIE)) {
            for (String part : line.split(";")) {
                String p = part.strip();
                if (p.startsWith(name + "=")) return p.substring(name.length() + 1);
            }
        }
        return null;
    }

    private static String dropCookie(String line, String name) {
        StringBuilder sb = new StringBuilder();
        for (String part : line.split(";")) {
            String p = part.strip();
            if (p.isEmpty() || p.startsWith(name + "=")) continue;
            if (!sb.isEmpty()) sb.append("; ");
            sb.append(p);
        }
        return sb.toString();
    }

    /** {@code rest} without the query parameter {@code name}. */
    static String stripParam(String rest, String name) {
        int q = rest.indexOf('?');
        if (q < 0) return rest;
        StringBuilder kept = new StringBuilder();
        for (String p : rest.substring(q + 1).split("&")) {
            if (p.equals(name) || p.startsWith(name + "=")) continue;
            if (!kept.isEmpty()) kept.append('&');
            kept.append(p);
        }
        return rest.substring(0, q) + (kept.isEmpty() ? "" : "?" + kept);
    }

    static String origin(String base) {
        try {
            URI u = URI.create(base);
            return u.getScheme() + "://" + u.getRawAuthority();
        } catch (IllegalArgumentException x) {
            return base;
        }
    }
}
