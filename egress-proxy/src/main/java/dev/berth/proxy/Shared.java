package dev.berth.proxy;

import dev.berth.proxy.audit.AuditSink;
import dev.berth.proxy.tls.InterceptionCa;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFactory;
import io.netty.channel.EventLoop;
import io.netty.channel.socket.nio.NioSocketChannel;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

/** Proxy-wide singletons handed to every session. */
final class Shared {
    private final ProxyConfig config;
    private final Gatekeeper gatekeeper;
    private final AuditSink audit;
    private final CredentialRegistry credentials;
    private final InterceptionCa ca;
    /** TLS client context for upstreams of intercepted connections; null when no secret is configured. */
    private final io.netty.handler.ssl.SslContext upstreamTls;
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

    /** Monotonic nanoseconds for quota windows and connection rates (a fake one in tests). */
    final java.util.function.LongSupplier nanos;

    Shared(ProxyConfig config, Gatekeeper gatekeeper, AuditSink audit, CredentialRegistry credentials,
           InterceptionCa ca, io.netty.handler.ssl.SslContext upstreamTls, java.util.function.LongSupplier nanos) {
        this.nanos = nanos;
        this.config = config;
        this.gatekeeper = gatekeeper;
        this.audit = audit;
        this.credentials = credentials;
        this.ca = ca;
        this.upstreamTls = upstreamTls;
        this.supply = new SupplyGuard(config.advisories(), java.time.Instant::now);
    }

    private final SupplyGuard supply;

    /** Release-age and advisory checks of the registry rules (shared cache of publish times). */
    SupplyGuard supply() { return supply; }

    ProxyConfig config() { return config; }
    Gatekeeper gatekeeper() { return gatekeeper; }
    AuditSink audit() { return audit; }
    CredentialRegistry credentials() { return credentials; }
    InterceptionCa ca() { return ca; }
    io.netty.handler.ssl.SslContext upstreamTls() { return upstreamTls; }

    WorkspaceUsage usage(String workspaceId) {
        return usage.computeIfAbsent(workspaceId, k -> new WorkspaceUsage(nanos));
    }

    /** Client sessions by workspace and run, so revoking a run's grant can close what the run opened. */
    private final ConcurrentMap<String, java.util.Set<Session>> byRun = new ConcurrentHashMap<>();

    private static String runKey(String workspaceId, String runId) {
        return workspaceId + "\n" + runId;
    }

    void register(Session s) {
        String run = s.context.runId();
        if (run == null) return;
        String key = runKey(s.context.workspaceId(), run);
        byRun.computeIfAbsent(key, k -> ConcurrentHashMap.newKeySet()).add(s);
        s.client.closeFuture().addListener(f -> byRun.computeIfPresent(key, (k, set) -> {
            set.remove(s);
            return set.isEmpty() ? null : set;
        }));
    }

    /** A grant was revoked or expired: close the connections of its run and those that carried its placeholders. */
    void revoked(CredentialGrant g, String reason) {
        java.util.Set<Session> mine = byRun.get(runKey(g.workspaceId(), g.runId()));
        if (mine != null) for (Session s : mine) s.revoke(reason);
        for (Session s : g.sessions()) s.revoke(reason);
    }

    void forget(String workspaceId) {
        usage.remove(workspaceId);
    }

    /**
     * Read buffers for upstream sockets: Netty's adaptive sizing, up to 256 KiB instead of its 64 KiB default, so a
     * bulk download goes through the relay in fewer, larger pieces, and at most 4 reads per batch instead of 16, so a
     * batch stays within 1 MiB (a relay bounds its read-ahead by one batch).
     */
    static io.netty.channel.RecvByteBufAllocator upstreamReads() {
        io.netty.channel.AdaptiveRecvByteBufAllocator a = new io.netty.channel.AdaptiveRecvByteBufAllocator(64, 16 * 1024, 256 * 1024);
        a.maxMessagesPerRead(4);
        return a;
    }

    /**
     * The client's own loop: an accepted socket's, or an attach LocalChannel's, which is a socket loop as well
     * ({@link SharedLoopIo}). So a session's handlers on both channels run on one thread, with no locks and no
     * hand-off in the data path.
     */
    EventLoop upstreamLoop(Channel client) {
        return client.eventLoop();
    }

    ChannelFactory<Channel> upstreamChannelFactory() {
        return NioSocketChannel::new;
    }

}
