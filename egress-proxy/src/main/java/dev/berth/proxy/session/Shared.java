package dev.berth.proxy.session;

import dev.berth.proxy.audit.AuditSink;
import dev.berth.proxy.tls.InterceptionCa;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFactory;
import io.netty.channel.EventLoop;
import io.netty.channel.socket.nio.NioSocketChannel;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

/**
 * Proxy-wide state handed to every session: settings, the gatekeeper, the audit sink, TLS material, per-workspace
 * counters, the open channels, and the sessions of each run (so revoking a run's grant can close them). Thread-safe.
 */
public final class Shared {
    private final Settings config;
    private final Gatekeeper gatekeeper;
    private final AuditSink audit;
    private final InterceptionCa ca;
    /** TLS client context for upstreams of intercepted connections; null when no secret is configured. */
    private final io.netty.handler.ssl.SslContext upstreamTls;
    private final ConcurrentMap<String, Usage> usage = new ConcurrentHashMap<>();
    /** Tenants' counters: kept for the proxy's life, so a tenant's quotas outlive its workspaces. */
    private final ConcurrentMap<String, Usage> tenants = new ConcurrentHashMap<>();
    /** Closed workspaces whose counters are kept until they are full again (see {@link #forget}). */
    private final java.util.Set<String> forgotten = ConcurrentHashMap.newKeySet();
    private final Object admissions = new Object();
    private final Delays delays;
    /** All client and upstream channels, so shutdown can close them while every loop still runs. */
    private final io.netty.channel.group.ChannelGroup channels =
            new io.netty.channel.group.DefaultChannelGroup("egress", io.netty.util.concurrent.GlobalEventExecutor.INSTANCE);

    public void track(Channel ch) {
        channels.add(ch);
    }

    public void closeAll() {
        channels.close().awaitUninterruptibly(2, java.util.concurrent.TimeUnit.SECONDS);
    }

    /** Monotonic nanoseconds for quota windows and connection rates (a fake one in tests). */
    final java.util.function.LongSupplier nanos;

    public Shared(Settings config, Gatekeeper gatekeeper, AuditSink audit, InterceptionCa ca, io.netty.handler.ssl.SslContext upstreamTls,
                  java.util.function.LongSupplier nanos, Delays delays) {
        this.nanos = nanos;
        this.delays = delays;
        this.config = config;
        this.gatekeeper = gatekeeper;
        this.audit = audit;
        this.ca = ca;
        this.upstreamTls = upstreamTls;
    }

    public Settings config() { return config; }
    public Gatekeeper gatekeeper() { return gatekeeper; }
    public AuditSink audit() { return audit; }
    public InterceptionCa ca() { return ca; }
    /** TLS client context for upstreams of intercepted connections; null when nothing is intercepted. */
    public io.netty.handler.ssl.SslContext upstreamTls() { return upstreamTls; }

    /** How a connection setup waits for its turn (the event loop's timer; a fake clock's in tests). */
    public Delays delays() { return delays; }

    /** The quotas a connection of {@code owner} is counted against: its workspace's and its tenant's, created on first use. */
    public Quotas quotas(Owner owner) {
        long now = nanos.getAsLong();
        forgotten.remove(owner.workspaceId());
        Usage ws = usage.computeIfAbsent(owner.workspaceId(), k -> new Usage("workspace '" + k + "'", config.maxBytesPerWorkspace(),
                config.quotaWindow(), config.maxConnectsPerSecond(), config.shaping().connectBurst(), "maxBytesPerWorkspace",
                "maxConnectsPerSecond", now));
        Shaping s = config.shaping();
        Usage t = owner.tenantId() == null ? null : tenants.computeIfAbsent(owner.tenantId(), k -> new Usage("tenant '" + k + "'",
                s.maxBytesPerTenant(), config.quotaWindow(), s.maxConnectsPerSecondPerTenant(), s.connectBurstPerTenant(),
                "maxBytesPerTenant", "maxConnectsPerSecondPerTenant", now));
        return new Quotas(ws, t, s, nanos, admissions);
    }

    /** Client sessions by workspace and run, so revoking a run's grant can close what the run opened. */
    private final ConcurrentMap<String, java.util.Set<Session>> byRun = new ConcurrentHashMap<>();

    private static String runKey(String workspaceId, String runId) {
        return workspaceId + "\n" + runId;
    }

    /** Tracks a session under its run (if any) until its client channel closes. */
    public void register(Session s) {
        String run = s.context().runId();
        if (run == null) return;
        String key = runKey(s.context().workspaceId(), run);
        byRun.computeIfAbsent(key, k -> ConcurrentHashMap.newKeySet()).add(s);
        s.client().closeFuture().addListener(f -> byRun.computeIfPresent(key, (k, set) -> {
            set.remove(s);
            return set.isEmpty() ? null : set;
        }));
    }

    /** A grant was revoked or expired: close the connections of its run and those that carried its placeholders. */
    public void revoked(String workspaceId, String runId, java.util.Collection<Session> carriers, String reason) {
        java.util.Set<Session> mine = byRun.get(runKey(workspaceId, runId));
        if (mine != null) for (Session s : mine) s.revoke(reason);
        for (Session s : carriers) s.revoke(reason);
    }

    /**
     * A workspace closed: its counters are dropped once they are full again (nothing open, both buckets refilled), so
     * closing and reopening a workspace under the same id does not reset its quotas. Drops every forgotten workspace's
     * counters that are full by now.
     */
    public void forget(String workspaceId) {
        forgotten.add(workspaceId);
        long now = nanos.getAsLong();
        for (String id : forgotten) {
            Usage u = usage.get(id);
            if (u == null || u.idle(now)) {
                if (u != null) usage.remove(id, u);
                forgotten.remove(id);
            }
        }
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
     * (the proxy's loops serve both kinds of channel). So a session's handlers on both channels run on one thread, with no locks and no
     * hand-off in the data path.
     */
    public EventLoop upstreamLoop(Channel client) {
        return client.eventLoop();
    }

    ChannelFactory<Channel> upstreamChannelFactory() {
        return NioSocketChannel::new;
    }

}
