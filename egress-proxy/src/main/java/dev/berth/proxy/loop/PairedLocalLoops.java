package dev.berth.proxy.loop;

import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.local.LocalAddress;

/**
 * The proxy's event loops ({@link SharedLoopIo}: sockets and attach LocalChannels). A LocalChannel pair on two loops
 * hands every write to the other thread; the proxy-side channel (registered by the LocalServerChannel's acceptor through {@link #register(Channel)}) is
 * therefore put on the loop of the engine-side channel that connected to it, found by that channel's address.
 * Thread-safe.
 */
public final class PairedLocalLoops extends MultiThreadIoEventLoopGroup {
    private final java.util.concurrent.ConcurrentMap<java.net.SocketAddress, io.netty.channel.EventLoop> pending =
            new java.util.concurrent.ConcurrentHashMap<>();

    public PairedLocalLoops(int threads) {
        super(threads, SharedLoopIo.newFactory());
    }

    public void pair(LocalAddress engineSide, io.netty.channel.EventLoop loop) {
        pending.put(engineSide, loop);
    }

    public void unpair(LocalAddress engineSide) {
        pending.remove(engineSide);
    }

    @Override
    public ChannelFuture register(Channel channel) {
        io.netty.channel.EventLoop loop = channel.remoteAddress() == null ? null : pending.remove(channel.remoteAddress());
        return loop != null ? loop.register(channel) : super.register(channel);
    }
}
