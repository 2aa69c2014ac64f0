package dev.berth.mcp.preview;

import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.PortExposure;
import dev.berth.engine.Ports;
import dev.berth.engine.agent.PortStream;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.TooLongFrameException;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.handler.codec.http.QueryStringDecoder;
import io.netty.util.ReferenceCountUtil;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Pattern;

/**
 * One browser connection to the preview listener. Per request: route by {@code /p/<id>/}, check access, then relay
 * the re-encoded request head and its body to the app over a {@link PortStream} (one per browser connection and
 * exposure; a request for another exposure on the same connection replaces it). App bytes go back unparsed. Runs on
 * the connection's event loop; stream callbacks hop onto it.
 */
final class PreviewHandler extends ChannelInboundHandlerAdapter {
    private static final Pattern ID = Pattern.compile("[a-z2-7]{32}");
    /** The cookie that carries a preview's access after a {@code ?berth_token=} visit; never passed to the app. */
    static final String COOKIE = "berth_preview";

    private final PreviewServer server;
    private ChannelHandlerContext ctx;

    /** The app connection of this browser connection, or null. */
    private Upstream up;
    /** What to send once {@link #up} is connected (head and body bytes in order). */
    private final ArrayDeque<ByteBuf> pending = new ArrayDeque<>();
    /** The current request is refused: drop its body until its end. */
    private boolean discarding;
    /** The current request body is chunked: re-encode its parts as chunks. */
    private boolean chunked;
    /** The current request asked for an Upgrade: after its head, the connection is a byte relay. */
    private boolean upgrading;
    private boolean raw;
    /** The current request goes to the backend (the MCP endpoint), not to a preview. */
    private boolean toBackend;
    /** This browser connection's relay to the backend (berth http's MCP endpoint); set in handlerAdded. */
    private BackendRelay backend;

    PreviewHandler(PreviewServer server) { this.server = server; }

    private final class Upstream implements PortStream.Sink {
        final PortExposure exposure;
        final AtomicInteger counter;
        final ResponseRewriter responses;
        /** "/p/<id>" or "" (host form): a browser connection switching between the two forms gets a new upstream. */
        final String prefix;
        volatile Ports.Connection connection;
        volatile PortStream stream;
        private int unconsumed; // consumed before the stream was known; guarded by this
        boolean ended;          // event loop only

        Upstream(PortExposure exposure, AtomicInteger counter, ResponseRewriter responses, String prefix) {
            this.prefix = prefix;
            this.exposure = exposure;
            this.counter = counter;
            this.responses = responses;
        }

        void attached(Ports.Connection c) {
            connection = c;
            synchronized (this) {
                stream = c.stream();
                if (unconsumed > 0) stream.consumed(unconsumed);
                unconsumed = 0;
            }
        }

        private void consumed(int n) {
            synchronized (this) {
                if (stream == null) {
                    unconsumed += n;
                    return;
                }
            }
            stream.consumed(n);
        }

        @Override
        public void onData(ByteBuffer data) {
            int n = data.remaining();
            if (!ctx.channel().isActive()) {
                consumed(n); // the browser is gone: drain what the app still sends until it closes
                return;
            }
            ByteBuf in = Unpooled.wrappedBuffer(data);
            ctx.channel().eventLoop().execute(() -> {
                if (ended || !ctx.channel().isActive()) {
                    in.release();
                    consumed(n);
                    return;
                }
                List<ByteBuf> out = responses.feed(in);
                if (responses.failed()) {
                    out.forEach(ReferenceCountUtil::release);
                    consumed(n);
                    server.engine.ports().recordAccess(exposure, exposure.id(), false, "the app sent a malformed HTTP response", null, null, remote());
                    end("malformed HTTP response");
                    send(502, "the app on port " + exposure.port() + " sent a response that is not HTTP/1.1", Map.of(), true);
                    return;
                }
                write(out, n);
            });
        }

        /** Writes {@code out} to the browser; the app's {@code n} bytes count as consumed once it took them. */
        private void write(List<ByteBuf> out, int n) {
            if (out.isEmpty()) {
                consumed(n); // held by the decoder (a partial head, at most its limit)
                return;
            }
            io.netty.channel.ChannelFuture last = null;
            for (ByteBuf b : out) last = ctx.channel().write(b);
            ctx.channel().flush();
            last.addListener(f -> {
                if (f.isSuccess()) consumed(n);
            });
        }

        @Override
        public void onClose() {
            // the app closed its side: what it sent is complete (a response delimited by close, or the end of a
            // connection it will not reuse); the browser connection ends with it
            ctx.channel().eventLoop().execute(() -> {
                if (ended) return; // this browser connection left it (for another preview, or the MCP endpoint)
                if (ctx.channel().isActive()) {
                    for (ByteBuf b : responses.end()) ctx.channel().write(b);
                }
                end(null);
                ctx.channel().writeAndFlush(Unpooled.EMPTY_BUFFER).addListener(ChannelFutureListener.CLOSE);
            });
        }

        @Override
        public void onReset(String reason) {
            ctx.channel().eventLoop().execute(() -> {
                if (ended) return;
                end(null);
                ctx.channel().close();
            });
        }

        @Override
        public void onWritable() {
            ctx.channel().eventLoop().execute(() -> ctx.channel().config().setAutoRead(true));
        }

        /** This upstream is done (event loop): release its slot; reset the stream when {@code reset} is given. */
        void end(String reset) {
            if (ended) return;
            ended = true;
            counter.decrementAndGet();
            PortStream s = stream;
            if (s != null) {
                if (reset != null) s.reset(reset);
                else s.shutdownOutput(); // the app closed (or reset): close our side too, so the agent frees the stream
            }
            Ports.Connection c = connection;
            if (c != null) c.close();
            if (up == this) up = null;
        }
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        this.ctx = ctx;
        this.backend = new BackendRelay(ctx, server.settings.backend(), () -> {
            if (raw) ctx.pipeline().remove("http");
        }, why -> send(502, "the MCP endpoint behind this listener is not reachable: " + why, Map.of(), true));
    }

    // ------------------------------------------------------------------ the backend (berth http's MCP endpoint)

    /** Relays {@code req} (head re-encoded, body as it comes) to the backend; its response bytes come back unparsed. */
    private void toBackend(HttpRequest req) {
        if (up != null) up.end("the browser connection moved to the MCP endpoint");
        toBackend = true;
        upgrading = req.headers().contains(HttpHeaderNames.UPGRADE) && req.headers().containsValue(HttpHeaderNames.CONNECTION, "upgrade", true);
        backend.send(Unpooled.wrappedBuffer(HttpHeads.backendHead(req, remote())));
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
        backend.browserWritable(ctx.channel().isWritable());
        ctx.fireChannelWritabilityChanged();
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        backend.close();
        if (up != null) {
            // like a proxy: the app sees EOF (not a reset) and closes its side; an app that does not within 5 s is reset
            Upstream u = up;
            PortStream s = u.stream;
            if (s != null) {
                s.shutdownOutput();
                ctx.executor().schedule(() -> u.end("browser closed the connection"), 5, java.util.concurrent.TimeUnit.SECONDS);
            } else {
                u.end("browser closed the connection");
            }
        }
        pending.forEach(ReferenceCountUtil::release);
        pending.clear();
        ctx.fireChannelInactive();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        ctx.close();
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        try {
            if (msg instanceof HttpRequest req) {
                request(req);
            }
            if (msg instanceof HttpContent c) {
                content(c);
            } else if (msg instanceof ByteBuf b && raw) {
                forward(b.retain());
            }
        } finally {
            ReferenceCountUtil.release(msg);
        }
    }

    // ------------------------------------------------------------------ requests

    private void request(HttpRequest req) {
        discarding = false;
        chunked = false;
        upgrading = false;
        if (req.decoderResult().isFailure()) {
            Throwable t = req.decoderResult().cause();
            if (t instanceof TooLongFrameException) {
                boolean line = t.getMessage() != null && t.getMessage().contains("line");
                refuse(line ? 414 : 431, line ? "request line too long (at most 8192 bytes)" : "request headers too large (at most 16384 bytes)", null, req);
            } else {
                refuse(400, "malformed request: " + t.getMessage(), null, req);
            }
            return;
        }
        HttpHeaders h = req.headers();
        String ambiguous = HttpHeads.ambiguity(h);
        if (ambiguous != null) {
            refuse(400, ambiguous, null, req);
            return;
        }
        chunked = h.contains(HttpHeaderNames.TRANSFER_ENCODING);
        String uri = req.uri();
        String hostId = server.idOfHost(h.get(HttpHeaderNames.HOST));
        String id;
        String rest;
        if (hostId != null) {
            // <id>.<domain>: the app lives at / of its own host name
            if (!uri.startsWith("/")) {
                refuse(400, "the request target must be a path (origin-form), got \"" + uri + "\"", null, req);
                return;
            }
            id = hostId;
            rest = uri;
        } else if (uri.startsWith("/p/")) {
            int slash = uri.indexOf('/', 3);
            int q = uri.indexOf('?', 3);
            int endId = slash < 0 ? (q < 0 ? uri.length() : q) : (q >= 0 && q < slash ? q : slash);
            id = uri.substring(3, endId);
            rest = uri.substring(endId);
        } else if (server.settings.backend() != null) {
            toBackend(req);
            return;
        } else {
            refuse(404, "not a preview URL: previews are served at /p/<id>/", null, req);
            return;
        }
        toBackend = false;
        if (backend.open()) backend.close();
        String prefix = hostId != null ? "" : "/p/" + id;
        String secure = server.secure() ? "; Secure" : "";
        if (!ID.matcher(id).matches()) {
            refuse(404, "no such preview", null, req);
            server.engine.ports().recordAccess(null, id, false, "malformed preview id", req.method().name(), null, remote());
            return;
        }
        Ports ports = server.engine.ports();
        Optional<PortExposure> found = ports.find(id);
        if (found.isEmpty() || found.get().expired(java.time.Instant.now())) {
            String why = found.isEmpty() ? "no such preview (never exposed, unexposed, or its workspace closed)" : "the preview link has expired";
            ports.recordAccess(found.orElse(null), id, false, why, req.method().name(), rest, remote());
            refuse(404, why, null, req);
            return;
        }
        PortExposure e = found.get();
        // access
        QueryStringDecoder qs = new QueryStringDecoder(rest);
        String urlToken = qs.parameters().getOrDefault("berth_token", List.of()).stream().findFirst().orElse(null);
        String via;
        if (e.access().equals(PortExposure.LINK)) {
            via = "link";
        } else {
            String presented = HttpHeads.bearer(h.get(HttpHeaderNames.AUTHORIZATION));
            String fromCookie = HttpHeads.cookie(h, COOKIE);
            if (presented == null && urlToken != null) presented = urlToken;
            if (presented != null) {
                String tenant = server.auth.tenantOf(presented);
                if (tenant == null) {
                    ports.recordAccess(e, id, false, "invalid token", req.method().name(), rest, remote());
                    refuse(401, "the token is not valid for this server", null, req);
                    return;
                }
                if (!tenant.equals(e.tenant())) {
                    // another tenant's preview looks exactly like one that does not exist
                    ports.recordAccess(e, id, false, "token of another tenant (" + tenant + ")", req.method().name(), rest, remote());
                    refuse(404, "no such preview (never exposed, unexposed, or its workspace closed)", null, req);
                    return;
                }
                via = urlToken != null && presented.equals(urlToken) ? "url token" : "bearer token";
                if (urlToken != null) {
                    // swap the token in the URL for a cookie scoped to this preview, and drop it from the address bar
                    // (host form: a host-only cookie, no Domain, so no other preview host ever receives it)
                    String clean = HttpHeads.stripParam(rest, "berth_token");
                    ports.recordAccess(e, id, true, "url token; cookie set", req.method().name(), clean, remote());
                    String cookie = COOKIE + "=" + server.cookieFor(e.id(), e.tenant()) + "; Path=" + prefix + "/; HttpOnly; SameSite=Lax" + secure;
                    String to = prefix + (clean.isEmpty() || clean.startsWith("?") ? "/" + clean : clean);
                    refuse(303, "see " + to, Map.of("Location", to, "Set-Cookie", cookie), req);
                    return;
                }
            } else if (fromCookie != null && java.security.MessageDigest.isEqual(fromCookie.getBytes(StandardCharsets.US_ASCII),
                    server.cookieFor(e.id(), e.tenant()).getBytes(StandardCharsets.US_ASCII))) {
                via = "cookie";
            } else {
                String why = fromCookie != null ? "preview cookie not valid (set by an earlier server run, or for another preview)" : "no token";
                ports.recordAccess(e, id, false, why, req.method().name(), rest, remote());
                refuse(401, "this preview needs the tenant's token: send Authorization: Bearer <token>, or open the URL once with ?berth_token=<token>", null, req);
                return;
            }
        }
        if (rest.isEmpty() || rest.startsWith("?")) {
            // the app's relative links need the trailing slash
            refuse(308, "see /p/" + e.id() + "/", Map.of("Location", "/p/" + e.id() + "/" + rest), req);
            return;
        }
        ports.recordAccess(e, id, true, via, req.method().name(), rest, remote());
        String publicOrigin = hostId != null ? server.hostOrigin(e.id()) : HttpHeads.origin(server.base());
        byte[] head = HttpHeads.appHead(req, e, rest, prefix, publicOrigin, server.settings.hostHeader(), server.secure(), remote());
        upgrading = h.contains(HttpHeaderNames.UPGRADE) && h.containsValue(HttpHeaderNames.CONNECTION, "upgrade", true);
        if (up != null && up.exposure.id().equals(e.id()) && up.prefix.equals(prefix) && !up.ended) {
            up.responses.requested(req.method().name());
            forward(Unpooled.wrappedBuffer(head));
            return;
        }
        if (up != null) up.end("the browser connection moved to another preview");
        AtomicInteger counter = server.connections.computeIfAbsent(e.id(), k -> new AtomicInteger());
        int max = server.settings.maxConnectionsPerPort();
        if (counter.incrementAndGet() > max) {
            counter.decrementAndGet();
            ports.recordAccess(e, id, false, "connection limit " + max + " reached", req.method().name(), rest, remote());
            refuse(503, "this preview already carries " + max + " connections (the limit per exposed port); retry later", null, req);
            return;
        }
        String app = "http://" + HttpHeads.appHost(server.settings.hostHeader(), req, e.port());
        Upstream u = new Upstream(e, counter, new ResponseRewriter(prefix, publicOrigin,
                List.of(app, "http://localhost:" + e.port(), "http://127.0.0.1:" + e.port()), COOKIE), prefix);
        u.responses.requested(req.method().name());
        up = u;
        pending.add(Unpooled.wrappedBuffer(head));
        Channel ch = ctx.channel();
        ch.config().setAutoRead(false);
        Thread.ofVirtual().name("berth-preview-connect").start(() -> {
            try {
                Ports.Connection c = ports.connect(e, u);
                ch.eventLoop().execute(() -> connected(u, c));
            } catch (EngineException x) {
                ch.eventLoop().execute(() -> failed(u, x));
            } catch (RuntimeException x) {
                ch.eventLoop().execute(() -> failed(u, new EngineException(EngineException.Kind.INTERNAL, x.toString(), x)));
            }
        });
    }

    private void connected(Upstream u, Ports.Connection c) {
        u.attached(c);
        if (u.ended || up != u || !ctx.channel().isActive()) {
            // the browser went away (or moved on) while the workspace woke up / the agent connected
            c.stream().reset("browser went away while connecting");
            c.close();
            if (!u.ended) u.end(null);
            return;
        }
        boolean ok = true;
        while (!pending.isEmpty()) {
            ByteBuf b = pending.poll();
            try {
                ok = c.stream().write(b.nioBuffer()) && ok;
            } finally {
                b.release();
            }
        }
        if (raw) ctx.pipeline().remove("http"); // leftover bytes after the upgrade head come back as a ByteBuf
        ctx.channel().config().setAutoRead(ok);
    }

    private void failed(Upstream u, EngineException x) {
        pending.forEach(ReferenceCountUtil::release);
        pending.clear();
        u.end(null);
        int status = x.kind() == EngineException.Kind.NOT_FOUND ? 404 : 502;
        server.engine.ports().recordAccess(u.exposure, u.exposure.id(), false, "upstream: " + x.getMessage(), null, null, remote());
        send(status, x.getMessage(), Map.of(), true);
    }

    private void content(HttpContent c) {
        if (discarding) {
            if (c instanceof LastHttpContent) discarding = false;
            return;
        }
        if (up == null && !toBackend) return;
        ByteBuf data = c.content();
        if (chunked) {
            if (data.isReadable()) {
                forward(Unpooled.copiedBuffer(Integer.toHexString(data.readableBytes()) + "\r\n", StandardCharsets.US_ASCII));
                forward(data.retain());
                forward(Unpooled.copiedBuffer("\r\n", StandardCharsets.US_ASCII));
            }
            if (c instanceof LastHttpContent) forward(Unpooled.copiedBuffer("0\r\n\r\n", StandardCharsets.US_ASCII));
        } else if (data.isReadable()) {
            forward(data.retain());
        }
        if (c instanceof LastHttpContent && upgrading) {
            // from here on the connection carries the upgraded protocol (WebSocket frames), both ways, unparsed
            raw = true;
            upgrading = false;
            if (toBackend ? backend.active() : up != null && up.stream != null) ctx.pipeline().remove("http");
        }
    }

    /** Sends bytes to the app now, or after the connection is up. Takes ownership of {@code b}. */
    private void forward(ByteBuf b) {
        if (toBackend) {
            backend.forward(b);
            return;
        }
        Upstream u = up;
        if (u == null || u.ended) {
            b.release();
            return;
        }
        if (u.stream == null) {
            pending.add(b);
            return;
        }
        try {
            if (!u.stream.write(b.nioBuffer())) ctx.channel().config().setAutoRead(false);
        } finally {
            b.release();
        }
    }

    // ------------------------------------------------------------------ helpers

    private void refuse(int status, String reason, Map<String, String> headers, HttpRequest req) {
        discarding = !(req instanceof io.netty.handler.codec.http.FullHttpRequest);
        boolean close = status >= 400 && status != 401 && status != 404 || req.decoderResult().isFailure() || !HttpUtil.isKeepAlive(req);
        if (status == 401 || status == 404) close = close || HttpUtil.getContentLength(req, 0L) > 0 || HttpUtil.isTransferEncodingChunked(req);
        send(status, reason, headers == null ? Map.of() : headers, close);
    }

    private void send(int status, String reason, Map<String, String> headers, boolean close) {
        var f = ctx.channel().writeAndFlush(Unpooled.wrappedBuffer(HttpHeads.response(status, reason, headers, close)));
        if (close) f.addListener(ChannelFutureListener.CLOSE);
    }

    private String remote() {
        return ctx.channel().remoteAddress() instanceof InetSocketAddress a ? a.getAddress().getHostAddress() : null;
    }
}
