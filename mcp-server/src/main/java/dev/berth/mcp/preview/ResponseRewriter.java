package dev.berth.mcp.preview;

import io.netty.buffer.ByteBuf;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.http.HttpDecoderConfig;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMessage;
import io.netty.handler.codec.http.HttpObject;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseDecoder;
import io.netty.handler.codec.http.HttpResponseEncoder;
import io.netty.util.ReferenceCountUtil;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The app's responses on one preview connection, parsed (Netty's decoder, streaming: a chunk or an SSE event goes on
 * as soon as it arrives) and re-encoded so their heads can be rewritten for where the browser sees the app:
 * {@code Location} that points into the app ({@code /login}, or {@code http://localhost:<port>/login}) gets the
 * public origin and the {@code /p/<id>} prefix; {@code Set-Cookie} gets {@code Path} under the prefix and loses a
 * {@code Domain} (the app's name for itself is not the browser's), and the app cannot set the preview's own cookie.
 * After a {@code 101} the bytes pass unparsed. Event loop only.
 */
final class ResponseRewriter {
    private final ArrayDeque<String> methods = new ArrayDeque<>();
    private final String prefix;
    private final String publicOrigin;
    private final List<String> appOrigins;
    private final String reservedCookie;
    private final EmbeddedChannel codec;
    private boolean failed;
    /** Responses to HEAD requests not yet re-encoded: their Transfer-Encoding must not make the encoder add a last chunk. */
    private final java.util.Set<HttpMessage> toHead = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());

    /**
     * @param prefix       {@code /p/<id>}, or "" when the app lives at {@code /} of its own host name
     * @param publicOrigin scheme://host[:port] the browser uses
     * @param appOrigins   origins the app may call itself in absolute redirects ({@code http://localhost:3000}, ...)
     */
    ResponseRewriter(String prefix, String publicOrigin, List<String> appOrigins, String reservedCookie) {
        this.prefix = prefix;
        this.publicOrigin = publicOrigin;
        this.appOrigins = appOrigins.stream().map(o -> o.toLowerCase(Locale.ROOT)).toList();
        this.reservedCookie = reservedCookie;
        this.codec = new EmbeddedChannel(new HttpResponseEncoder(), new Decoder());
    }

    /** A request with this method went to the app: its response comes next in order (HEAD responses have no body). */
    void requested(String method) { methods.add(method); }

    /** Whether the app sent something that is not HTTP/1.1: the connection must end. */
    boolean failed() { return failed; }

    /** The bytes for the browser for {@code in} from the app (taken). */
    List<ByteBuf> feed(ByteBuf in) {
        codec.writeInbound(in);
        return drain();
    }

    /** The app closed: completes a response delimited by the close. */
    List<ByteBuf> end() {
        codec.finish();
        List<ByteBuf> out = drain();
        for (Object o; (o = codec.readOutbound()) != null; ) out.add((ByteBuf) o);
        return out;
    }

    private List<ByteBuf> drain() {
        List<ByteBuf> out = new ArrayList<>(2);
        for (Object o; (o = codec.readInbound()) != null; ) {
            if (o instanceof ByteBuf raw && !(o instanceof HttpObject)) { // after a 101: the upgraded protocol
                out.add(raw);
                continue;
            }
            HttpObject h = (HttpObject) o;
            if (h.decoderResult().isFailure()) {
                failed = true;
                ReferenceCountUtil.release(h);
                continue;
            }
            if (h instanceof HttpResponse r) {
                rewrite(r.headers());
                if (toHead.remove(r)) r.headers().remove(HttpHeaderNames.TRANSFER_ENCODING);
            }
            codec.writeOutbound(h);
            for (Object e; (e = codec.readOutbound()) != null; ) out.add((ByteBuf) e);
        }
        return out;
    }

    private void rewrite(HttpHeaders h) {
        String loc = h.get(HttpHeaderNames.LOCATION);
        if (loc != null) h.set("Location", location(loc));
        List<String> cookies = h.getAll(HttpHeaderNames.SET_COOKIE);
        if (!cookies.isEmpty()) {
            h.remove(HttpHeaderNames.SET_COOKIE);
            for (String c : cookies) {
                String v = cookie(c);
                if (v != null) h.add("Set-Cookie", v);
            }
        }
    }

    /** {@code loc} as the browser must follow it. */
    String location(String loc) {
        if (loc.startsWith("/") && !loc.startsWith("//")) return prefix + loc;
        String lower = loc.toLowerCase(Locale.ROOT);
        for (String o : appOrigins) {
            if (lower.startsWith(o) && (lower.length() == o.length() || "/?#".indexOf(lower.charAt(o.length())) >= 0)) {
                String rest = loc.substring(o.length());
                return publicOrigin + prefix + (rest.startsWith("/") ? rest : "/" + rest);
            }
        }
        return loc;
    }

    /** {@code setCookie} as the browser must store it, or null to drop it. */
    String cookie(String setCookie) {
        String[] parts = setCookie.split(";");
        String name = parts[0].strip();
        int eq = name.indexOf('=');
        if (eq >= 0 && name.substring(0, eq).strip().equals(reservedCookie)) return null;
        StringBuilder sb = new StringBuilder(parts[0].strip());
        for (int i = 1; i < parts.length; i++) {
            String a = parts[i].strip();
            String key = a.contains("=") ? a.substring(0, a.indexOf('=')).strip().toLowerCase(Locale.ROOT) : a.toLowerCase(Locale.ROOT);
            if (key.equals("domain")) continue;
            if (key.equals("path") && !prefix.isEmpty()) {
                String path = a.substring(a.indexOf('=') + 1).strip();
                a = "Path=" + prefix + (path.startsWith("/") ? path : "/");
            }
            sb.append("; ").append(a);
        }
        return sb.toString();
    }

    /** Netty's response decoder, told which responses answer a HEAD (their Content-Length announces no body). */
    private final class Decoder extends HttpResponseDecoder {
        Decoder() {
            super(new HttpDecoderConfig().setMaxInitialLineLength(8192).setMaxHeaderSize(65536).setMaxChunkSize(65536));
        }

        @Override
        protected boolean isContentAlwaysEmpty(HttpMessage msg) {
            int code = ((HttpResponse) msg).status().code();
            if (code >= 100 && code < 200 && code != 101) return true; // interim: the final response follows
            String m = methods.poll();
            if ("HEAD".equals(m)) {
                toHead.add(msg);
                return true;
            }
            return super.isContentAlwaysEmpty(msg);
        }
    }
}
