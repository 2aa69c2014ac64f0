package dev.berth.proxy;

import io.netty.channel.Channel;
import io.netty.channel.ChannelFactory;
import io.netty.channel.EventLoop;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.socket.nio.NioSocketChannel;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

/** Proxy-wide singletons handed to every session. */
final class Shared {
    private final ProxyConfig config;
    private final Gatekeeper gatekeeper;
    private final AuditSink audit;
    private final EventLoopGroup nioGroup;
    private final ForwardHook forwardHook;
    private final ConcurrentMap<String, WorkspaceUsage> usage = new ConcurrentHashMap<>();
    /** All client and upstream channels, so shutdown can close them while every loop still runs. */
    private final io.netty.channel.group.ChannelGroup channels =
            new io.netty.channel.group.DefaultChannelGroup("egress", io.netty.util.concurrent.GlobalEventExecutor.INSTANCE);

    void track(Channel ch) {
        channels.add(ch);
    }

    void closeAll() {
        channels.close().awaitUninterruptibly(2, java.util.concurrent.TimeUnit.SECONDS);
    }

    Shared(ProxyConfig config, Gatekeeper gatekeeper, AuditSink audit, EventLoopGroup nioGroup, ForwardHook forwardHook) {
        this.config = config;
        this.gatekeeper = gatekeeper;
        this.audit = audit;
        this.nioGroup = nioGroup;
        this.forwardHook = forwardHook;
    }

    ProxyConfig config() { return config; }
    Gatekeeper gatekeeper() { return gatekeeper; }
    AuditSink audit() { return audit; }
    ForwardHook forwardHook() { return forwardHook; }

    WorkspaceUsage usage(String workspaceId) {
        return usage.computeIfAbsent(workspaceId, k -> new WorkspaceUsage());
    }

    void forget(String workspaceId) {
        usage.remove(workspaceId);
    }

    /** Same loop as the client when it is a NIO loop (listener mode); otherwise any NIO loop. */
    EventLoop upstreamLoop(Channel client) {
        return client instanceof NioSocketChannel ? client.eventLoop() : nioGroup.next();
    }

    ChannelFactory<Channel> upstreamChannelFactory() {
        return NioSocketChannel::new;
    }

    /**
     * Extension point for the planned credential injection: sees (and may rewrite) the header
     * list of an allowed plain-HTTP request just before it is serialized upstream. Never called
     * for denied requests or tunnels. Default: no-op.
     */
    @FunctionalInterface
    interface ForwardHook {
        void beforeForward(EgressContext context, String host, int port, java.util.List<String[]> headers);
    }
}
