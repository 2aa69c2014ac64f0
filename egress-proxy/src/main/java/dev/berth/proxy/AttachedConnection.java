package dev.berth.proxy;

import dev.berth.proxy.session.Downstream;
import dev.berth.proxy.session.Session;
import io.netty.buffer.ByteBuf;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.EventLoop;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Engine side of an attached connection: the engine's {@link ProxyConnection} handle plus the
 * handler on the engine-side LocalChannel that turns proxy output into {@link ClientSink} calls.
 *
 * <p>Threading: {@link #write} etc. are called from the engine's reader thread and only enqueue
 * tasks on the LocalChannel's loop (never block). Back-pressure towards the engine is byte
 * accounting: bytes written but not yet read by the proxy pipeline; above HIGH_WATER
 * {@code write} returns false, and {@link ClientSink#proxyWritabilityChanged(boolean)
 * proxyWritabilityChanged(true)} fires once the proxy has consumed down to LOW_WATER. The proxy
 * only consumes when its upstream can take the bytes, so this is end-to-end.
 */
final class AttachedConnection extends ChannelInboundHandlerAdapter implements ProxyConnection {
    static final long HIGH_WATER = 256 * 1024;
    static final long LOW_WATER = 64 * 1024;

    private final String id;
    private final ClientSink sink;
    private final AtomicLong pending = new AtomicLong();
    private final AtomicBoolean engineBlocked = new AtomicBoolean();
    private final AtomicBoolean closed = new AtomicBoolean();
    private Channel channel;
    private EventLoop loop;
    private boolean connected;
    private final ArrayDeque<Object> beforeConnect = new ArrayDeque<>();
    private boolean outputSignalled;
    /** Proxy-side channel; set by the proxy when it accepts the Attach signal. */
    volatile Channel proxySide;
    volatile Session session;

    AttachedConnection(String id, ClientSink sink) {
        this.id = id;
        this.sink = sink;
    }

    /** The engine-side LocalChannel (tests). */
    Channel engineSide() {
        return channel;
    }

    void bind(Channel ch) {
        this.channel = ch;
        this.loop = ch.eventLoop();
    }

    /** Runs on the loop: the LocalChannel is connected; flush what the engine wrote meanwhile. */
    void connected(boolean ok, Throwable cause) {
        if (!ok) {
            if (closed.compareAndSet(false, true)) {
                sink.reset("proxy unavailable: " + cause);
                sink.closed();
            }
            beforeConnect.clear();
            return;
        }
        connected = true;
        while (!beforeConnect.isEmpty()) channel.write(beforeConnect.poll());
        channel.flush();
    }

    void send(Object msg) {
        loop.execute(() -> {
            if (connected) {
                channel.writeAndFlush(msg);
            } else {
                beforeConnect.add(msg);
            }
        });
    }

    @Override
    public String id() {
        return id;
    }

    @Override
    public boolean write(ByteBuffer fromClient) {
        if (closed.get()) return false;
        int n = fromClient.remaining();
        if (n == 0) return true;
        ByteBuf copy = channel.alloc().buffer(n);
        copy.writeBytes(fromClient);
        long now = pending.addAndGet(n);
        send(copy);
        if (now >= HIGH_WATER) {
            engineBlocked.set(true);
            // the proxy may have drained to LOW_WATER before the flag was up, and then told nobody
            return pending.get() <= LOW_WATER && engineBlocked.compareAndSet(true, false);
        }
        return true;
    }

    @Override
    public boolean writable() {
        return !engineBlocked.get();
    }

    /** Proxy side consumed n bytes (called on the proxy loop). */
    void consumed(int n) {
        long now = pending.addAndGet(-n);
        if (now <= LOW_WATER && engineBlocked.compareAndSet(true, false) && !closed.get()) {
            sink.proxyWritabilityChanged(true);
        }
    }

    @Override
    public void shutdownInput() {
        if (!closed.get()) send(new Downstream.InputShutdown());
    }

    @Override
    public void abort(String reason) {
        if (closed.get()) return;
        send(new Downstream.Reset(reason));
    }

    @Override
    public void clientWritable(boolean writable) {
        Session s = session;
        if (s != null) s.engineWritable(writable);
        Channel p = proxySide;
        if (p != null) p.eventLoop().execute(() -> p.pipeline().fireUserEventTriggered(new Downstream.Writability(writable)));
    }

    // ---- engine-side LocalChannel handler: proxy -> engine ----

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        switch (msg) {
            case ByteBuf b -> {
                try {
                    if (!closed.get() && !outputSignalled) sink.write(b.nioBuffer());
                } finally {
                    b.release();
                }
            }
            case Downstream.OutputShutdown s -> {
                if (!outputSignalled && !closed.get()) {
                    outputSignalled = true;
                    sink.shutdownOutput();
                }
                // everything before the signal has been read: the proxy's graceful close can happen now, from here
                if (s.thenClose()) ctx.close();
            }
            case Downstream.Reset r -> {
                if (closed.compareAndSet(false, true)) {
                    sink.reset(r.reason());
                    sink.closed();
                }
                ctx.close();
            }
            default -> io.netty.util.ReferenceCountUtil.release(msg);
        }
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        if (closed.compareAndSet(false, true)) {
            if (!outputSignalled) sink.shutdownOutput();
            sink.closed();
        }
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        if (closed.compareAndSet(false, true)) {
            sink.reset("attach channel error: " + cause);
            sink.closed();
        }
        ctx.close();
    }
}
