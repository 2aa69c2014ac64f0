package dev.berth.proxy;

import dev.berth.proxy.audit.AuditRecord;
import dev.berth.proxy.audit.AuditSink;
import dev.berth.proxy.credentials.CredentialRegistry;
import dev.berth.proxy.forward.Forwarding;
import dev.berth.proxy.forward.FrontendHandler;
import dev.berth.proxy.http.RequestDecoder;
import dev.berth.proxy.loop.PairedLocalLoops;
import dev.berth.proxy.net.Resolver;
import dev.berth.proxy.policy.ApprovalSettings;
import dev.berth.proxy.policy.Policy;
import dev.berth.proxy.policy.SecretBinding;
import dev.berth.proxy.session.Gatekeeper;
import dev.berth.proxy.session.Session;
import dev.berth.proxy.session.Settings;
import dev.berth.proxy.session.Shared;
import dev.berth.proxy.supply.SupplyGuard;
import dev.berth.proxy.tls.InterceptionCa;
import dev.berth.proxy.tls.UpstreamTls;
import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.ChannelPipeline;
import io.netty.channel.local.LocalAddress;
import io.netty.channel.local.LocalChannel;
import io.netty.channel.local.LocalServerChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http.HttpResponseEncoder;
import io.netty.handler.timeout.IdleStateHandler;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The egress proxy: the only way out of a workspace.
 *
 * <p>Two ways in: {@link #attach} (in-JVM, what the engine uses for bytes relayed from the
 * guest's 127.0.0.1:3128) and {@link #listen} (a loopback TCP port with a fixed context, for
 * tests and benchmarks). Both feed the same pipeline: strict request decoder, then CONNECT
 * tunnel or plain-HTTP forwarding, each decision made by the {@link Gatekeeper}.
 */
public final class EgressProxy implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(EgressProxy.class.getName());

    private final ProxyConfig config;
    private final Shared shared;
    private final Forwarding forwarding;
    private final CredentialRegistry credentials;
    private final Approvals approvals;
    private final PairedLocalLoops loops;
    private final ExecutorService resolverThreads;
    private final Channel localServer;
    private final LocalAddress localAddress;
    private final AtomicLong ids = new AtomicLong();

    private final String instance = UUID.randomUUID().toString().substring(0, 8);

    private EgressProxy(Builder b) {
        ProxyConfig cfg = b.config;
        this.config = cfg;
        // one group for sockets and attach LocalChannels (SharedLoopIo): an attached connection's upstream socket runs
        // on the loop of its LocalChannel pair, so its bytes reach the engine without a hand-off between threads
        this.loops = new PairedLocalLoops(b.threads);
        // Resolution may block (system resolver), so it runs off the event loops. A bounded pool
        // with a bounded queue: a workspace spraying unique names cannot create unbounded
        // blocked getaddrinfo calls; overflow is a denial with a reason, not a stall.
        ThreadPoolExecutor dns = new ThreadPoolExecutor(64, 64, 30, TimeUnit.SECONDS, new LinkedBlockingQueue<>(4096),
                Thread.ofPlatform().name("egress-dns-", 0).daemon(true).factory(), new ThreadPoolExecutor.AbortPolicy());
        dns.allowCoreThreadTimeOut(true);
        this.resolverThreads = dns;
        this.approvals = new Approvals(cfg.approval(), b.audit, cfg.unsafeAllowLoopbackUpstreams());
        Settings settings = cfg.settings();
        Gatekeeper gk = new Gatekeeper(settings, b.resolver, resolverThreads, approvals.gate());
        InterceptionCa ca;
        io.netty.handler.ssl.SslContext upstreamTls = null;
        try {
            ca = b.caDirectory == null ? InterceptionCa.generate(instance) : InterceptionCa.loadOrCreate(b.caDirectory, instance);
            if (cfg.intercepts()) {
                upstreamTls = UpstreamTls.clientContext(cfg.upstreamTrustFiles());
                ca.serverContext("warm-up.invalid"); // generates the shared leaf key now, not on the first CONNECT
            }
        } catch (IOException e) {
            loops.shutdownGracefully(0, 0, TimeUnit.SECONDS);
            dns.shutdownNow();
            throw new IllegalStateException("egress proxy cannot start: " + e.getMessage(), e);
        }
        this.credentials = new CredentialRegistry(cfg.secrets(), cfg.placeholderTtl(), b.nanos);
        this.shared = new Shared(settings, gk, b.audit, ca, upstreamTls, b.nanos, b.delays);
        credentials.onRevoke((g, why) -> shared.revoked(g.workspaceId(), g.runId(), g.sessions(), why));
        this.forwarding = new Forwarding(credentials, new SupplyGuard(cfg.advisories(), java.time.Instant::now));
        for (SecretBinding sb : cfg.secrets().values()) {
            if (sb.unsafeAllowPlainHttp()) {
                String msg = "UNSAFE: secret '" + sb.name() + "' has unsafeAllowPlainHttp - its value may cross the network unencrypted";
                LOG.log(System.Logger.Level.WARNING, msg);
                b.audit.record(AuditRecord.note("unsafe-setting", msg));
            }
        }
        if (!cfg.secrets().isEmpty()) {
            b.audit.record(AuditRecord.note("secrets", "secret bindings " + cfg.secrets().values().stream()
                    .map(x -> x.name() + "->" + x.hosts() + (x.unsafeAllowPlainHttp() ? " (unsafeAllowPlainHttp)" : "")).toList()
                    + "; interception CA " + ca.certificate().getSubjectX500Principal().getName()));
        }
        b.audit.record(AuditRecord.note("proxy-start", "ceiling " + cfg.ceiling().describe()));
        if (cfg.approval().enabled()) {
            b.audit.record(AuditRecord.note("approval", "approvable hosts " + cfg.approval().hosts().describe() + ", durations "
                    + cfg.approval().durations().stream().map(ApprovalSettings::label).toList()));
        }
        if (!cfg.registryRules().isEmpty()) b.audit.record(AuditRecord.note("registry-rules", cfg.registryRules().toString()));
        if (!cfg.internalHosts().isEmpty()) {
            b.audit.record(AuditRecord.note("internal-hosts", "named hosts that may resolve into non-public ranges: " + cfg.internalHosts()));
        }
        List<String> suffixWarnings = new java.util.ArrayList<>(cfg.ceiling().sharedSuffixWarnings());
        for (SecretBinding sb : cfg.secrets().values()) {
            for (dev.berth.proxy.policy.HostPattern p : sb.patterns()) {
                // a token sent to every stranger's bucket or repository under the suffix is a token given away
                String w = Policy.sharedSuffixWarning(p, "secret '" + sb.name() + "' bound to '" + p + "'");
                if (w != null) suffixWarnings.add(w);
            }
        }
        suffixWarnings.addAll(cfg.approval().hosts().sharedSuffixWarnings("approval.hosts entry"));
        for (String w : suffixWarnings) {
            LOG.log(System.Logger.Level.WARNING, w);
            b.audit.record(AuditRecord.note("policy-warning", w));
        }
        if (cfg.unsafeAllowLoopbackUpstreams()) {
            String msg = "UNSAFE: unsafeAllowLoopbackUpstreams is ON - workspaces may reach 127.0.0.0/8 and ::1. Tests/benchmarks only.";
            LOG.log(System.Logger.Level.WARNING, msg);
            b.audit.record(AuditRecord.note("unsafe-setting", msg));
        }
        this.localAddress = new LocalAddress("berth-egress-" + instance);
        this.localServer = new ServerBootstrap()
                .group(loops)
                .channel(LocalServerChannel.class)
                .childHandler(new ChannelInitializer<LocalChannel>() {
                    @Override
                    protected void initChannel(LocalChannel ch) {
                        ch.pipeline().addLast("attach", new AttachInbound(EgressProxy.this::installAttached));
                    }
                })
                .bind(localAddress).syncUninterruptibly().channel();
    }

    public static Builder builder(ProxyConfig config) {
        return new Builder(config);
    }

    /**
     * Attaches one guest connection. Never blocks; bytes written before the internal channel is
     * up are queued in order. The returned handle is what the engine feeds guest bytes into.
     */
    public ProxyConnection attach(EgressContext context, ClientSink toClient) {
        Objects.requireNonNull(context, "context");
        Objects.requireNonNull(toClient, "toClient");
        AttachedConnection conn = new AttachedConnection(nextId(), toClient);
        // The engine-side channel gets a name of its own so that its proxy-side peer is registered on the same loop
        // (PairedLocalLoops): bytes then cross from one to the other without a hand-off between threads.
        LocalAddress self = new LocalAddress("berth-attach-" + instance + "-" + conn.id());
        ChannelFuture reg = new Bootstrap().group(loops).channel(LocalChannel.class).handler(conn).register();
        Channel ch = reg.channel();
        conn.bind(ch);
        shared.track(ch);
        loops.pair(self, ch.eventLoop());
        reg.addListener(r -> {
            if (!r.isSuccess()) {
                loops.unpair(self);
                conn.connected(false, r.cause());
                return;
            }
            ch.connect(localAddress, self).addListener(f -> {
                loops.unpair(self);
                conn.connected(f.isSuccess(), f.cause());
            });
        });
        // Same ordered queue as the engine's writes: the Attach signal is always the first message.
        conn.send(new AttachInbound.Attach(context, conn));
        return conn;
    }

    private void installAttached(ChannelHandlerContext attachCtx, AttachInbound.Attach a) {
        Session s = new Session(shared, a.context().owner(), a.connection().id());
        a.connection().session = s;
        install(attachCtx.pipeline(), s);
    }

    /**
     * Opens a loopback TCP listener whose connections all run under {@code context}. Non-loopback
     * bind addresses are refused: this mode exists for tests and benchmarks.
     */
    public Listener listen(InetSocketAddress bind, EgressContext context) throws IOException {
        if (!bind.getAddress().isLoopbackAddress()) {
            throw new IOException("listen address " + bind + " is not loopback; TCP listener mode is loopback-only");
        }
        ChannelFuture f = new ServerBootstrap()
                .group(loops)
                .channel(NioServerSocketChannel.class)
                .childOption(ChannelOption.ALLOW_HALF_CLOSURE, true)
                .childOption(ChannelOption.TCP_NODELAY, true)
                .childHandler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        install(ch.pipeline(), new Session(shared, context.owner(), nextId()));
                    }
                })
                .bind(bind).awaitUninterruptibly();
        if (!f.isSuccess()) throw new IOException("cannot listen on " + bind, f.cause());
        return new Listener(f.channel());
    }

    private void install(ChannelPipeline p, Session s) {
        ProxyConfig c = config;
        s.client(p.channel());
        shared.track(p.channel());
        shared.register(s);
        RequestDecoder decoder = new RequestDecoder(c.maxHeaderBytes(), c.maxHeaderCount(), c.headerTimeout().toMillis());
        p.addLast("idle", new IdleStateHandler(0, 0, c.idleTimeout().toMillis(), TimeUnit.MILLISECONDS));
        p.addLast("decoder", decoder);
        p.addLast("encoder", new HttpResponseEncoder());
        p.addLast("frontend", new FrontendHandler(forwarding, s, decoder));
    }

    /** What connections of this proxy share (tests). */
    Shared shared() {
        return shared;
    }

    private String nextId() {
        return instance + "-" + ids.incrementAndGet();
    }

    /**
     * The interception CA certificate (PEM). Commands must trust it (e.g. via SSL_CERT_FILE,
     * NODE_EXTRA_CA_CERTS, REQUESTS_CA_BUNDLE, GIT_SSL_CAINFO) for intercepted hosts to work.
     * Stable for the proxy's life (and across restarts with {@link Builder#caDirectory}).
     */
    public String caCertificatePem() {
        return shared.ca().certificatePem();
    }

    /**
     * Mints one placeholder per named binding for one run. The placeholders are honoured only on
     * connections whose {@link EgressContext#workspaceId()} is {@code workspaceId}, whose
     * {@link EgressContext#runId()} is {@code runId}, and whose
     * {@link EgressContext#secrets()} names the binding, and only until the grant is closed.
     *
     * @throws IllegalArgumentException naming unknown bindings and listing the configured ones
     */
    public CredentialGrant mint(String workspaceId, String runId, java.util.Collection<String> bindingNames) {
        Objects.requireNonNull(workspaceId, "workspaceId");
        Objects.requireNonNull(runId, "runId"); // placeholders are honoured only on connections of this run
        Objects.requireNonNull(bindingNames, "bindingNames");
        return new CredentialGrant(credentials.mint(workspaceId, runId, bindingNames));
    }

    /**
     * True when the proxy terminates TLS for hosts of every workspace (registry rules), so every workspace must trust
     * its CA, not only workspaces with secret bindings.
     */
    public boolean interceptsForEveryWorkspace() {
        return !config.registryRules().isEmpty();
    }

    /** The operator's placeholder lifetime. */
    java.time.Duration credentialsTtl() {
        return credentials.ttl();
    }

    /** Tests: runs placeholder expirations due by the clock now (in production Caffeine's scheduler does). */
    void expireCredentials() {
        credentials.cleanUp();
    }

    /** Drops quota counters for a closed workspace. */
    public void forgetWorkspace(String workspaceId) {
        shared.forget(workspaceId);
        approvals.endWorkspace(workspaceId, "workspace " + workspaceId + " closed");
    }

    /** Human-approved, time-boxed grants of approvable hosts (config {@code approval}); see {@link Approvals}. */
    public Approvals approvals() {
        return approvals;
    }

    @Override
    public void close() {
        // Close connections while all loops still run: a LocalChannel close schedules work on its
        // peer's loop, which must not be terminated yet.
        shared.closeAll();
        localServer.close().syncUninterruptibly();
        loops.shutdownGracefully(0, 2, TimeUnit.SECONDS).syncUninterruptibly();
        resolverThreads.shutdownNow();
        shared.audit().close();
    }

    /** A loopback TCP listener (tests/benchmarks). */
    public static final class Listener implements AutoCloseable {
        private final Channel channel;

        Listener(Channel channel) {
            this.channel = channel;
        }

        public InetSocketAddress address() {
            return (InetSocketAddress) channel.localAddress();
        }

        @Override
        public void close() {
            channel.close().syncUninterruptibly();
        }
    }

    public static final class Builder {
        private final ProxyConfig config;
        private Resolver resolver = Resolver.system();
        private AuditSink audit = AuditSink.discard();
        private int threads = Math.max(2, Runtime.getRuntime().availableProcessors());
        private java.nio.file.Path caDirectory;
        private java.util.function.LongSupplier nanos = System::nanoTime;
        private dev.berth.proxy.session.Delays delays = dev.berth.proxy.session.Delays.NETTY;

        /** Tests: how a shaped connection setup waits for its turn (with {@link #clock}, a fake timer that never waits). */
        Builder delays(dev.berth.proxy.session.Delays d) { this.delays = Objects.requireNonNull(d); return this; }

        /** Tests: the clock of quota windows, connection rates and placeholder lifetimes. */
        Builder clock(java.util.function.LongSupplier nanos) { this.nanos = Objects.requireNonNull(nanos); return this; }

        private Builder(ProxyConfig config) {
            this.config = Objects.requireNonNull(config);
        }

        public Builder resolver(Resolver r) { this.resolver = Objects.requireNonNull(r); return this; }
        public Builder auditSink(AuditSink a) { this.audit = Objects.requireNonNull(a); return this; }
        public Builder threads(int n) { this.threads = n; return this; }

        /**
         * Persist the interception CA in {@code dir} ({@code ca.key} mode 0600, {@code ca.crt}):
         * loaded if present, created otherwise. Without it the CA is generated in memory at start
         * and workspaces must be handed the new certificate after every restart.
         */
        public Builder caDirectory(java.nio.file.Path dir) { this.caDirectory = Objects.requireNonNull(dir); return this; }

        public EgressProxy start() {
            return new EgressProxy(this);
        }
    }
}
