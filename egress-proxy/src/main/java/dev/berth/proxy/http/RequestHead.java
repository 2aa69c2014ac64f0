package dev.berth.proxy.http;

import dev.berth.proxy.net.HostNames;
import io.netty.buffer.ByteBuf;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * A parsed, validated HTTP/1.x request head. Body framing has already been checked by
 * {@link RequestDecoder}: at most one of {@code chunked} / {@code contentLength >= 0}.
 */
public final class RequestHead {
    public final String method;
    public final String target;
    public final String version;
    /** Header (name, value) pairs in arrival order; names as sent. */
    public final List<String[]> headers;
    final boolean chunked;
    final long contentLength;

    RequestHead(String method, String target, String version, List<String[]> headers, boolean chunked, long contentLength) {
        this.method = method;
        this.target = target;
        this.version = version;
        this.headers = headers;
        this.chunked = chunked;
        this.contentLength = contentLength;
    }

    public boolean hasBody() {
        return chunked || contentLength > 0;
    }

    public List<String> all(String name) {
        List<String> out = new ArrayList<>(1);
        for (String[] h : headers) {
            if (h[0].equalsIgnoreCase(name)) out.add(h[1]);
        }
        return out;
    }

    /** True if a Connection header lists the token (case-insensitive). */
    boolean connectionHas(String token) {
        for (String v : all("Connection")) {
            for (String t : v.split(",")) {
                if (t.trim().equalsIgnoreCase(token)) return true;
            }
        }
        return false;
    }

    public boolean wantsClose() {
        if (connectionHas("close")) return true;
        return "HTTP/1.0".equals(version) && !connectionHas("keep-alive");
    }

    /** A body fragment, passed through to the upstream verbatim (already validated framing). */
    public record Body(ByteBuf content, boolean last) {}

    /** The request head (or connection) was malformed; respond with status and close. */
    public record Failure(int status, String reason) {}

    String summary() {
        return method.toUpperCase(Locale.ROOT) + " " + HostNames.printable(target);
    }

    /** Bytes of this head on the wire (request line, header lines, CRLFs), for the byte quota. */
    public long wireBytes() {
        long n = method.length() + target.length() + version.length() + 4L + 2;
        for (String[] h : headers) n += h[0].length() + h[1].length() + 4L;
        return n;
    }
}
