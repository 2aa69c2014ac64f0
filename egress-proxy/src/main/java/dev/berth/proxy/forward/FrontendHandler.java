package dev.berth.proxy.forward;

import dev.berth.proxy.http.RequestDecoder;
import dev.berth.proxy.http.RequestHead;
import dev.berth.proxy.http.Responses;
import dev.berth.proxy.session.Downstream;
import dev.berth.proxy.session.Session;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.handler.timeout.IdleStateEvent;
import io.netty.util.ReferenceCountUtil;

/**
 * Client-facing dispatcher: takes validated request heads from {@link RequestDecoder} and
 * routes CONNECT to {@link TunnelStarter} and everything else to {@link HttpForwarder}. Also owns
 * the connection-level events (idle timeout, client EOF, engine back-pressure).
 *
 * <p>Inside an intercepted TLS connection ({@code interception != null}) the same handler serves
 * the decrypted requests: CONNECT is refused there, everything else goes to an HttpForwarder in
 * HTTPS mode.
 */
public final class FrontendHandler extends ChannelInboundHandlerAdapter {
    private final Forwarding services;
    private final Session session;
    private final RequestDecoder decoder;
    private final Interception interception;
    private HttpForwarder http;

    public FrontendHandler(Forwarding services, Session session, RequestDecoder decoder) {
        this(services, session, decoder, null);
    }

    FrontendHandler(Forwarding services, Session session, RequestDecoder decoder, Interception interception) {
        this.services = services;
        this.session = session;
        this.decoder = decoder;
        this.interception = interception;
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) {
        session.client(ctx.channel());
        ctx.fireChannelActive();
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        session.client(ctx.channel());
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        switch (msg) {
            case RequestHead.Failure f -> refuseMalformed(ctx, f);
            case RequestHead head when head.method.equals("CONNECT") && interception != null ->
                    refuseMalformed(ctx, new RequestHead.Failure(400, "CONNECT inside an intercepted TLS connection to '"
                            + interception.host + "' is not allowed"));
            case RequestHead head when head.method.equals("CONNECT") -> {
                if (http != null && http.busy()) {
                    refuseMalformed(ctx, new RequestHead.Failure(400, "CONNECT while a forwarded request is in progress"));
                    return;
                }
                if (http != null) http.releaseUpstream(); // this handler leaves the pipeline
                new TunnelStarter(services, session, ctx, decoder).start(head);
            }
            case RequestHead head -> {
                if (http == null) http = new HttpForwarder(services, session, ctx, decoder, interception);
                http.onHead(head);
            }
            case RequestHead.Body body -> {
                if (http != null) {
                    http.onBody(body);
                } else {
                    ReferenceCountUtil.release(body.content());
                }
            }
            default -> ReferenceCountUtil.release(msg);
        }
    }

    private void refuseMalformed(ChannelHandlerContext ctx, RequestHead.Failure f) {
        if (http != null && http.busy()) {
            // Framing broke mid-body of a forwarded request: the upstream saw a partial request
            // and the response may be half-relayed, so no clean 400 is possible. Tear down.
            session.decided("http", null, 0, null, false, f.reason());
            http.abort(f.reason());
            return;
        }
        Session.Exchange ex = interception == null ? session.exchange("http", null, null, 0)
                : session.exchange("https", null, interception.host, interception.port);
        ex.decide(false, null, f.reason());
        ex.finish("refused: malformed request");
        ctx.channel().config().setAutoRead(false);
        Responses.send(ctx.channel(), f.status(), f.reason(), false).addListener(ChannelFutureListener.CLOSE);
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
        if (evt instanceof IdleStateEvent) {
            String reason = "idle timeout (" + session.config().idleTimeout().toMillis() + " ms without traffic)";
            if (http != null) http.abort(reason);
            Downstream.abort(ctx.channel(), reason);
        } else if (evt instanceof ChannelInputShutdownEvent) {
            // Client finished sending. An in-flight request still gets its response, then we close.
            if (http != null && http.busy()) {
                http.closeAfterResponse();
            } else {
                Downstream.closeGracefully(ctx.channel());
            }
        } else if (evt instanceof io.netty.handler.ssl.SslHandshakeCompletionEvent hs) {
            if (!hs.isSuccess() && interception != null) {
                interception.closeReason = "client TLS handshake failed (does the client trust the Berth interception CA?): "
                        + hs.cause().getMessage();
            }
        } else if (evt instanceof Downstream.Writability w) {
            if (http != null) http.clientWritabilityChanged();
        } else {
            ctx.fireUserEventTriggered(evt);
        }
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
        if (http != null) http.clientWritabilityChanged();
        ctx.fireChannelWritabilityChanged();
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        if (http != null) http.clientClosed();
        ctx.fireChannelInactive();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        if (interception != null && interception.closeReason == null) interception.closeReason = "client connection error: " + cause.getMessage();
        if (http != null) http.abort("client connection error: " + cause);
        ctx.close();
    }
}
