package dev.berth.proxy.session;

import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelOption;
import io.netty.channel.socket.DuplexChannel;

/**
 * Close semantics for the client-facing channel, which is either a TCP socket (listener mode)
 * or a LocalChannel bridged to the engine (attach mode). LocalChannel has no half-close and no
 * RST, so those are carried in-band as {@link Signal} objects that the engine-side handler turns
 * into the engine's {@code ClientSink.shutdownOutput()} / {@code ClientSink.reset(String)}.
 */
public final class Downstream {
    private Downstream() {}

    /** In-band control messages on the attach LocalChannel pair. */
    public sealed interface Signal permits OutputShutdown, InputShutdown, Reset, Writability {}

    /**
     * Proxy -> engine: no more bytes for the guest; with {@code thenClose} the engine side also closes the pair once
     * it has read this far (see {@link #closeGracefully}).
     */
    public record OutputShutdown(boolean thenClose) implements Signal {}

    /** Engine -> proxy: the guest sent EOF. */
    public record InputShutdown() implements Signal {}

    /** Either direction: abort with reason. */
    public record Reset(String reason) implements Signal {}

    /** Engine -> proxy (as a user event): the guest side can/cannot take more bytes. */
    public record Writability(boolean writable) implements Signal {}

    /**
     * Attach mode with TLS interception: an {@code SslHandler} between the frontend and the
     * LocalChannel rejects non-byte messages, so signals are sent past it, after flushing the
     * TLS records queued before them (so OutputShutdown still follows the last byte).
     */
    public static final class SignalBypass extends io.netty.channel.ChannelOutboundHandlerAdapter {
        @Override
        public void write(io.netty.channel.ChannelHandlerContext ctx, Object msg, io.netty.channel.ChannelPromise promise) {
            if (msg instanceof Signal) {
                ctx.flush();
                ctx.pipeline().firstContext().write(msg, promise);
            } else {
                ctx.write(msg, promise);
            }
        }
    }

    public static void shutdownOutput(Channel ch) {
        if (ch instanceof DuplexChannel d) {
            d.shutdownOutput();
        } else if (ch.isActive()) {
            ch.writeAndFlush(new OutputShutdown(false));
        }
    }

    /**
     * Flush what is queued, then close (FIN). On an attach LocalChannel the close is left to the engine side, which
     * closes the pair when it reads the {@link OutputShutdown} signal: closing a LocalChannel discards whatever its
     * peer has not read yet, so a close from this side lost the tail of a download the engine had not caught up
     * with (a 24 MiB response arrived 7 MiB long in a microVM test under load).
     */
    public static void closeGracefully(Channel ch) {
        if (!ch.isActive()) {
            ch.close();
            return;
        }
        if (ch instanceof DuplexChannel) {
            ch.writeAndFlush(Unpooled.EMPTY_BUFFER).addListener(ChannelFutureListener.CLOSE);
        } else {
            ch.writeAndFlush(new OutputShutdown(true));
        }
    }

    /** Abort: RST on TCP, Reset signal on attach. Pending output is discarded. */
    public static void abort(Channel ch, String reason) {
        if (ch instanceof DuplexChannel) {
            if (ch.isOpen()) {
                try {
                    ch.config().setOption(ChannelOption.SO_LINGER, 0);
                } catch (RuntimeException ignored) {
                    // already closing; a FIN instead of RST is acceptable
                }
            }
            ch.close();
        } else if (ch.isActive()) {
            ch.writeAndFlush(new Reset(reason)).addListener(ChannelFutureListener.CLOSE);
        } else {
            ch.close();
        }
    }
}
