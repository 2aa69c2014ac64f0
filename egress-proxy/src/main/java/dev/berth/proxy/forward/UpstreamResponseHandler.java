package dev.berth.proxy.forward;

import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpDecoderConfig;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpMessage;
import io.netty.handler.codec.http.HttpResponse;
import io.netty.handler.codec.http.HttpResponseDecoder;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.handler.ssl.SslHandshakeCompletionEvent;
import io.netty.util.ReferenceCountUtil;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Relays one upstream's responses to the client. Responses are decoded and re-encoded (Netty
 * codec), so the client always sees canonical framing whatever the upstream sent; a
 * read-until-close body is turned into chunked for HTTP/1.1 clients so keep-alive survives.
 */
final class UpstreamResponseHandler extends ChannelInboundHandlerAdapter {
    private final HttpForwarder fwd;
    private boolean expectHead;
    private boolean informational;
    private boolean started;
    boolean reusable = true;

    UpstreamResponseHandler(HttpForwarder fwd) {
        this.fwd = fwd;
    }

    HttpResponseDecoder decoder() {
        HttpDecoderConfig cfg = new HttpDecoderConfig().setMaxHeaderSize(64 * 1024).setMaxInitialLineLength(8192);
        return new HttpResponseDecoder(cfg) {
            @Override
            protected boolean isContentAlwaysEmpty(HttpMessage msg) {
                return expectHead || super.isContentAlwaysEmpty(msg);
            }
        };
    }

    void expect(boolean headRequest) {
        this.expectHead = headRequest;
        this.started = false;
        this.informational = false;
        this.awaitingFilter = false;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (fwd.ex == null || !fwd.isCurrentUpstream(ctx.channel())) {
            // Bytes nobody asked for (e.g. after a complete response): this upstream is unusable.
            ReferenceCountUtil.release(msg);
            reusable = false;
            ctx.close();
            return;
        }
        if (msg instanceof HttpResponse r) {
            if (r.decoderResult().isFailure()) {
                ReferenceCountUtil.release(msg);
                String why = "malformed upstream response: " + r.decoderResult().cause().getMessage();
                if (!started) fwd.failBeforeResponse(502, why); else fwd.abort(why);
                ctx.close();
                return;
            }
            int code = r.status().code();
            if (code == 101) {
                ReferenceCountUtil.release(msg);
                fwd.abort("upstream attempted a protocol switch (101), which is not supported");
                return;
            }
            long head = r.status().toString().length() + 11L;
            for (var e : r.headers()) head += e.getKey().length() + e.getValue().length() + 4L;
            fwd.session.usage().addBytes(head); // response heads count too
            informational = code >= 100 && code < 200;
            if (!informational) {
                started = true;
                reusable = HttpUtil.isKeepAlive(r);
                prepare(r);
                if (fwd.filtering != null && code == 200 && !expectHead) {
                    held = r;
                    buffered = ctx.alloc().compositeBuffer(Integer.MAX_VALUE);
                    started = false; // nothing reached the client yet: a failure can still answer with a status
                }
            } else {
                stripHopByHop(r.headers());
                fwd.redact(r.headers());
            }
        }
        if (msg instanceof HttpContent c) {
            int n = c.content().readableBytes();
            fwd.ex.addDown(n);
            String over = fwd.session.usage().addBytes(n);
            if (over != null) {
                ReferenceCountUtil.release(msg);
                fwd.abort(over);
                return;
            }
        }
        if (held != null) {
            hold(msg);
            return;
        }
        boolean last = msg instanceof LastHttpContent;
        if (last) fwd.redact(((LastHttpContent) msg).trailingHeaders());
        fwd.client().write(msg, fwd.client().voidPromise());
        if (last) {
            if (informational) {
                informational = false;
            } else {
                fwd.client().flush();
                fwd.complete(reusable);
            }
        }
    }

    /** Metadata being filtered: its head, and its body so far (bounded by maxMetadataBytes). */
    private HttpResponse held;
    /** The whole response is in and being filtered: the upstream closing now ends nothing. */
    private boolean awaitingFilter;
    private io.netty.buffer.CompositeByteBuf buffered;

    private void hold(Object msg) {
        if (msg instanceof HttpContent c) {
            int max = fwd.session.config().maxMetadataBytes();
            if (buffered.readableBytes() + (long) c.content().readableBytes() > max) {
                ReferenceCountUtil.release(msg);
                dropHeld();
                reusable = false;
                fwd.failBeforeResponse(502, "registry metadata response larger than " + max + " bytes (maxMetadataBytes): refused, "
                        + "since it cannot be filtered");
                ctx.close();
                return;
            }
            buffered.addComponent(true, c.content().retain());
        }
        boolean last = msg instanceof LastHttpContent;
        ReferenceCountUtil.release(msg);
        if (last) {
            HttpResponse r = held;
            byte[] raw = io.netty.buffer.ByteBufUtil.getBytes(buffered);
            dropHeld();
            started = true;
            awaitingFilter = true;
            fwd.filterResponse(r, raw, reusable);
        }
    }

    private void dropHeld() {
        held = null;
        if (buffered != null) buffered.release();
        buffered = null;
    }

    @Override
    public void handlerRemoved(ChannelHandlerContext ctx) {
        dropHeld();
    }

    private void prepare(HttpResponse r) {
        HttpHeaders h = r.headers();
        boolean chunked = HttpUtil.isTransferEncodingChunked(r);
        boolean hasLength = h.contains(HttpHeaderNames.CONTENT_LENGTH);
        int code = r.status().code();
        boolean bodyless = expectHead || code == 204 || code == 304;
        stripHopByHop(h);
        if (chunked && fwd.head.version.equals("HTTP/1.0")) {
            // HTTP/1.0 clients do not understand chunked: send the decoded body, delimit by close.
            h.remove(HttpHeaderNames.TRANSFER_ENCODING);
            fwd.closeAfter = true;
        }
        if (!chunked && !hasLength && !bodyless) {
            // Read-until-close body: re-frame as chunked for HTTP/1.1 clients, otherwise close.
            reusable = false;
            if (fwd.head.version.equals("HTTP/1.1")) {
                h.set(HttpHeaderNames.TRANSFER_ENCODING, HttpHeaderValues.CHUNKED);
            } else {
                fwd.closeAfter = true;
            }
        }
        if (fwd.closeAfter) {
            h.set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
        } else if (fwd.head.version.equals("HTTP/1.0")) {
            h.set(HttpHeaderNames.CONNECTION, HttpHeaderValues.KEEP_ALIVE);
        }
        r.setProtocolVersion(HttpVersion.HTTP_1_1);
        fwd.redact(h);
    }

    private static void stripHopByHop(HttpHeaders h) {
        List<String> listed = new ArrayList<>();
        for (String v : h.getAll(HttpHeaderNames.CONNECTION)) {
            for (String t : v.split(",")) listed.add(t.trim().toLowerCase(Locale.ROOT));
        }
        for (String name : List.of("connection", "keep-alive", "proxy-connection", "te", "trailer", "upgrade")) h.remove(name);
        for (String name : listed) {
            if (!name.equals("content-length") && !name.equals("transfer-encoding")) h.remove(name);
        }
        List<String> proxyHeaders = new ArrayList<>();
        for (var e : h) {
            if (e.getKey().toLowerCase(Locale.ROOT).startsWith("proxy-")) proxyHeaders.add(e.getKey());
        }
        proxyHeaders.forEach(h::remove);
    }

    private boolean paused;
    private ChannelHandlerContext ctx;

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        this.ctx = ctx;
    }

    /** Same flow control as {@link Relay}: autoRead off while the client cannot take more. */
    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
        fwd.client().flush();
        if (!fwd.session.clientWritable()) {
            paused = true;
            ctx.channel().config().setAutoRead(false);
        }
    }

    /** Start or resume reading the upstream if the client can take it. */
    void resume() {
        if (ctx != null && fwd.session.clientWritable()) {
            paused = false;
            ctx.channel().config().setAutoRead(true);
        }
    }

    boolean paused() {
        return paused;
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
        fwd.upstreamWritabilityChanged();
        ctx.fireChannelWritabilityChanged();
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        if (fwd.isCurrentUpstream(ctx.channel()) && fwd.ex != null && !awaitingFilter) {
            if (!started) {
                fwd.failBeforeResponse(502, "upstream closed the connection before sending a response");
            } else {
                fwd.abort("upstream closed the connection mid-response");
            }
        }
        ctx.fireChannelInactive();
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
        if (evt instanceof SslHandshakeCompletionEvent hs) {
            fwd.upstreamHandshake(ctx.channel(), hs.isSuccess() ? null : hs.cause());
        }
        ctx.fireUserEventTriggered(evt);
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        // A TLS failure may surface here before the handshake event; either reports it once.
        if (!started && (cause instanceof javax.net.ssl.SSLException || cause.getCause() instanceof javax.net.ssl.SSLException)) {
            fwd.upstreamHandshake(ctx.channel(), cause);
        }
        reusable = false;
        ctx.close();
    }
}
