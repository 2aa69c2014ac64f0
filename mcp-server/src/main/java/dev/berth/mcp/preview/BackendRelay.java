package dev.berth.mcp.preview;

import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelOption;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.util.ReferenceCountUtil;
import java.net.InetSocketAddress;
import java.util.ArrayDeque;
import java.util.function.Consumer;

/**
 * One browser connection's connection to the MCP endpoint behind the preview listener (under {@code berth http},
 * Tomcat on loopback): request bytes go there as the handler produces them, response bytes come back unparsed, and
 * each side's read pauses follow the other's writability. Opened on the first request for the endpoint; when the
 * endpoint closes it, the browser connection ends too. Event loop of the browser connection only.
 */
final class BackendRelay {
    private final ChannelHandlerContext browserCtx;
    private final InetSocketAddress address;
    private final Runnable onConnected;
    private final Consumer<String> onUnreachable;
    /** The connection to the backend, or null. */
    private Channel backend;
    /** What to send once {@link #backend} is connected. */
    private final ArrayDeque<ByteBuf> pending = new ArrayDeque<>();

    /**
     * @param address       the backend; null when the listener has none (then nothing is ever sent)
     * @param onConnected   runs once the bytes sent while connecting are written
     * @param onUnreachable runs with the reason when the connection fails
     */
    BackendRelay(ChannelHandlerContext browserCtx, InetSocketAddress address, Runnable onConnected, Consumer<String> onUnreachable) {
        this.browserCtx = browserCtx;
        this.address = address;
        this.onConnected = onConnected;
        this.onUnreachable = onUnreachable;
    }

    /** Whether a connection is open or opening. */
    boolean open() { return backend != null; }

    /** Whether the connection is up. */
    boolean active() { return backend != null && backend.isActive(); }

    /** Sends a request head, connecting first if needed. Takes ownership of {@code head}. */
    void send(ByteBuf head) {
        if (backend != null) {
            forward(head);
            return;
        }
        pending.add(head);
        connect();
    }

    /** Sends bytes now, or once connected; drops them when the connection is gone. Takes ownership of {@code b}. */
    void forward(ByteBuf b) {
        Channel bc = backend;
        if (bc == null) {
            b.release();
        } else if (!bc.isActive()) {
            pending.add(b); // still connecting (a closed backend is null)
        } else {
            bc.writeAndFlush(b);
            if (!bc.isWritable()) browserCtx.channel().config().setAutoRead(false);
        }
    }

    /** The browser's side became writable or not: the backend's reads follow. */
    void browserWritable(boolean writable) {
        Channel b = backend;
        if (b != null) b.config().setAutoRead(writable);
    }

    void close() {
        Channel b = backend;
        backend = null;
        pending.forEach(ReferenceCountUtil::release);
        pending.clear();
        if (b != null) b.close();
    }

    private void connect() {
        Channel browser = browserCtx.channel();
        browser.config().setAutoRead(false);
        ChannelFuture cf = new Bootstrap().group(browser.eventLoop()).channel(NioSocketChannel.class)
                .option(ChannelOption.TCP_NODELAY, true)
                .option(ChannelOption.AUTO_READ, true)
                .handler(new ChannelInboundHandlerAdapter() {
                    @Override
                    public void channelRead(ChannelHandlerContext bctx, Object msg) {
                        if (backend != bctx.channel() || !browser.isActive()) {
                            ReferenceCountUtil.release(msg);
                            return;
                        }
                        browser.writeAndFlush(msg);
                        if (!browser.isWritable()) bctx.channel().config().setAutoRead(false);
                    }

                    @Override
                    public void channelWritabilityChanged(ChannelHandlerContext bctx) {
                        if (backend == bctx.channel()) browser.config().setAutoRead(bctx.channel().isWritable());
                    }

                    @Override
                    public void channelInactive(ChannelHandlerContext bctx) {
                        // the MCP endpoint closed this connection: the browser's ends with it (after what it sent)
                        if (backend == bctx.channel()) {
                            backend = null;
                            browser.writeAndFlush(Unpooled.EMPTY_BUFFER).addListener(ChannelFutureListener.CLOSE);
                        }
                    }

                    @Override
                    public void exceptionCaught(ChannelHandlerContext bctx, Throwable cause) {
                        bctx.close();
                    }
                }).connect(address);
        backend = cf.channel();
        cf.addListener((ChannelFuture f) -> {
            if (backend != f.channel()) {
                f.channel().close();
                return;
            }
            if (!f.isSuccess()) {
                backend = null;
                pending.forEach(ReferenceCountUtil::release);
                pending.clear();
                onUnreachable.accept(f.cause().getMessage());
                return;
            }
            while (!pending.isEmpty()) f.channel().write(pending.poll());
            f.channel().flush();
            onConnected.run();
            browser.config().setAutoRead(f.channel().isWritable());
        });
    }
}
