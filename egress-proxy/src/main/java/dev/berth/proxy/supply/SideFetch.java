package dev.berth.proxy.supply;

import dev.berth.proxy.session.Gatekeeper;
import dev.berth.proxy.session.Session;
import io.netty.buffer.ByteBufUtil;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.handler.codec.http.DefaultFullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpClientCodec;
import io.netty.handler.codec.http.HttpContentDecompressor;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpObjectAggregator;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.timeout.ReadTimeoutHandler;
import java.net.InetSocketAddress;
import java.time.Instant;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * A request the proxy makes on its own behalf to a registry (not the workspace's bytes): the metadata that says when a
 * version was published, when the workspace asked for the version's file without it, and HEADs of Maven POMs. Goes to
 * the address the gatekeeper vetted for the workspace's own request (or, for another host, one it vets first), over
 * verified TLS when the workspace's request was HTTPS. The body is bounded by {@code maxMetadataBytes}; gzip is
 * accepted and decoded. One connection per fetch, closed after it.
 */
final class SideFetch {
    private SideFetch() {}

    /** Status, Last-Modified (or null) and body (empty for HEAD). */
    record Result(int status, Instant lastModified, String contentType, byte[] body) {}

    static CompletableFuture<Result> fetch(Session session, Gatekeeper.Vetted v, boolean tls, String method, String path, String accept) {
        CompletableFuture<Result> out = new CompletableFuture<>();
        int max = session.config().maxMetadataBytes();
        DefaultFullHttpRequest req = new DefaultFullHttpRequest(HttpVersion.HTTP_1_1, HttpMethod.valueOf(method), path);
        int defaultPort = tls ? 443 : 80;
        req.headers().set(HttpHeaderNames.HOST, v.host() + (v.port() == defaultPort ? "" : ":" + v.port()));
        req.headers().set(HttpHeaderNames.ACCEPT, accept);
        req.headers().set(HttpHeaderNames.ACCEPT_ENCODING, "gzip");
        req.headers().set(HttpHeaderNames.USER_AGENT, "berth-egress-proxy (release-age check)");
        req.headers().set(HttpHeaderNames.CONNECTION, "close");
        var cf = session.upstream(new ChannelInitializer<>() {
            @Override
            protected void initChannel(Channel ch) {
                if (tls) ch.pipeline().addLast("tls", session.shared().upstreamTls().newHandler(ch.alloc(), v.host(), v.port()));
                ch.pipeline().addLast(new ReadTimeoutHandler(session.config().connectTimeout().toMillis() * 3, TimeUnit.MILLISECONDS));
                ch.pipeline().addLast(new HttpClientCodec());
                ch.pipeline().addLast(new HttpContentDecompressor(0));
                ch.pipeline().addLast(new HttpObjectAggregator(max));
                ch.pipeline().addLast(new SimpleChannelInboundHandler<FullHttpResponse>() {
                    /**
                     * Reading starts, and the request goes out (behind the TLS handler's own start), once the channel
                     * is connected. Turning reads on while it was still connecting let the selector hand Netty a read
                     * of the connecting socket now and then, which failed with NotYetConnectedException and refused
                     * the metadata (502).
                     */
                    @Override
                    public void channelActive(ChannelHandlerContext ctx) {
                        ctx.channel().config().setAutoRead(true);
                        ctx.fireChannelActive();
                        ctx.writeAndFlush(req).addListener((ChannelFutureListener) w -> {
                            if (!w.isSuccess()) {
                                out.completeExceptionally(w.cause());
                                w.channel().close();
                            }
                        });
                    }

                    @Override
                    protected void channelRead0(ChannelHandlerContext ctx, FullHttpResponse r) {
                        String lm = r.headers().get(HttpHeaderNames.LAST_MODIFIED);
                        Instant t = null;
                        if (lm != null) {
                            try {
                                t = ZonedDateTime.parse(lm, DateTimeFormatter.RFC_1123_DATE_TIME).toInstant();
                            } catch (RuntimeException e) {
                                t = null;
                            }
                        }
                        out.complete(new Result(r.status().code(), t, r.headers().get(HttpHeaderNames.CONTENT_TYPE),
                                ByteBufUtil.getBytes(r.content())));
                        ctx.close();
                    }

                    @Override
                    public void channelInactive(ChannelHandlerContext ctx) {
                        out.completeExceptionally(new IllegalStateException("connection closed before a complete response"));
                    }

                    @Override
                    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
                        Throwable c = cause instanceof io.netty.handler.codec.DecoderException && cause.getCause() != null ? cause.getCause() : cause;
                        out.completeExceptionally(c instanceof io.netty.handler.codec.TooLongFrameException
                                ? new IllegalStateException("response larger than " + max + " bytes (maxMetadataBytes)") : c);
                        ctx.close();
                    }
                });
            }
        }).connect(new InetSocketAddress(v.address(), v.port()));
        cf.addListener((ChannelFutureListener) f -> {
            if (!f.isSuccess()) out.completeExceptionally(f.cause());
        });
        return out;
    }
}
