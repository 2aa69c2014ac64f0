package dev.berth.proxy;

import dev.berth.proxy.session.Downstream;
import dev.berth.proxy.session.Session;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.util.ReferenceCountUtil;
import java.util.function.BiConsumer;

/**
 * First handler on the proxy side of an attach LocalChannel. The first message must be the
 * {@link Attach} message carrying the context; it installs the normal proxy pipeline
 * behind itself. Afterwards it accounts consumed bytes (engine back-pressure) and translates
 * engine signals (EOF, abort) into what the rest of the pipeline understands.
 */
final class AttachInbound extends ChannelInboundHandlerAdapter {
    /** First message from the engine side: which context this connection runs under. */
    record Attach(EgressContext context, AttachedConnection connection) {}

    private final BiConsumer<ChannelHandlerContext, Attach> installer;
    private AttachedConnection conn;

    AttachInbound(BiConsumer<ChannelHandlerContext, Attach> installer) {
        this.installer = installer;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        switch (msg) {
            case Attach a when conn == null -> {
                conn = a.connection();
                conn.proxySide = ctx.channel();
                installer.accept(ctx, a);
            }
            case ByteBuf b when conn != null -> {
                conn.consumed(b.readableBytes());
                ctx.fireChannelRead(b);
            }
            case Downstream.InputShutdown s when conn != null -> ctx.fireUserEventTriggered(ChannelInputShutdownEvent.INSTANCE);
            case Downstream.Reset r when conn != null -> {
                Session s = conn.session;
                if (s != null) s.clientAbortReason("aborted by engine: " + r.reason());
                ctx.close();
            }
            default -> {
                ReferenceCountUtil.release(msg);
                ctx.close();
            }
        }
    }
}
