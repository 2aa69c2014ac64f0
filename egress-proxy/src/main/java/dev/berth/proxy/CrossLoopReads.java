package dev.berth.proxy;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufHolder;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelPipeline;
import io.netty.util.concurrent.EventExecutorGroup;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Read flow control for a channel whose I/O runs on one loop while the handler that consumes its reads runs on
 * another (attach mode: the upstream is a NIO socket, the session's handlers run on the attach LocalChannel's loop,
 * and the two kinds of channel cannot share a loop).
 *
 * <p>Two small handlers around the consumer: {@link IoSide} on the channel's own loop counts what it passes on, and
 * turns autoRead off the moment more than {@link #HIGH} bytes are in flight between the loops (on its own loop, so
 * it takes effect before the next read, not a batch later); {@link ConsumerSide}, on the consumer's executor just
 * before the consumer, counts them off again, and once the backlog is down to {@link #LOW} asks the I/O loop to
 * read on. The consumer says with {@link #want} whether its own peer can take more (socket or engine writability).
 *
 * <p>Why not one explicit {@code read()} per batch, as before: with autoRead off Netty reads one buffer per
 * {@code read()}, and the next read was requested only after the batch had crossed to the other loop and back: a
 * stop-and-wait relay. Measured with {@code egress-proxy/bench/run.sh}: the attach path moved 0.43x of direct
 * loopback throughput that way (figures in BENCHMARKS.md). Read-ahead stays bounded: {@link #HIGH} plus one read.
 */
final class CrossLoopReads {
    /** Bytes in flight between the loops above which the I/O loop stops reading. */
    static final long HIGH = 1 << 20;
    /** Backlog at which reading resumes. */
    static final long LOW = HIGH / 4;

    private final AtomicLong inFlight = new AtomicLong();
    private volatile boolean wanted;
    private volatile Channel channel;

    private CrossLoopReads() {}

    /**
     * Adds {@code consumer} to the end of {@code p} on {@code executor}, between the two counting handlers, and
     * returns the gate the consumer drives with {@link #want}. Reading starts when the consumer first wants it.
     */
    static CrossLoopReads install(ChannelPipeline p, EventExecutorGroup executor, String name, ChannelHandler consumer) {
        CrossLoopReads gate = new CrossLoopReads();
        gate.channel = p.channel();
        p.addLast(name + "-io", gate.new IoSide());
        p.addLast(executor, name + "-consumed", gate.new ConsumerSide());
        p.addLast(executor, name, consumer);
        return gate;
    }

    /** The consumer can (true) or cannot (false) take more; any thread. */
    void want(boolean more) {
        if (wanted == more) return;
        wanted = more;
        reevaluate();
    }

    long inFlight() {
        return inFlight.get();
    }

    private void reevaluate() {
        Channel ch = channel;
        if (ch.eventLoop().inEventLoop()) {
            evaluate(ch);
        } else {
            ch.eventLoop().execute(() -> evaluate(ch));
        }
    }

    /** On the I/O loop: the only place autoRead is turned on. */
    private void evaluate(Channel ch) {
        boolean on = wanted && inFlight.get() <= (ch.config().isAutoRead() ? HIGH : LOW);
        if (ch.config().isAutoRead() != on) ch.config().setAutoRead(on);
    }

    static long size(Object msg) {
        if (msg instanceof ByteBuf b) return Math.max(1, b.readableBytes());
        if (msg instanceof ByteBufHolder h) return Math.max(1, h.content().readableBytes());
        return 1;
    }

    /** On the channel's loop, before the consumer's hop. */
    private final class IoSide extends ChannelInboundHandlerAdapter {
        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            if (inFlight.addAndGet(size(msg)) > HIGH && ctx.channel().config().isAutoRead()) {
                ctx.channel().config().setAutoRead(false);
            }
            ctx.fireChannelRead(msg);
        }
    }

    /** On the consumer's executor, just before it. */
    private final class ConsumerSide extends ChannelInboundHandlerAdapter {
        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            long n = size(msg);
            long before = inFlight.getAndAdd(-n);
            if (before > LOW && before - n <= LOW) reevaluate();
            ctx.fireChannelRead(msg);
        }
    }
}
