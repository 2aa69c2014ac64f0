package dev.berth.proxy.session;

import dev.berth.proxy.audit.AuditRecord;
import dev.berth.proxy.policy.Policy;
import io.netty.bootstrap.Bootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import java.time.Instant;

/**
 * Per client-connection state shared by the frontend, tunnel and forwarder handlers: who the
 * connection belongs to, the effective policy (computed once), and the decision/audit outputs.
 * Confined to the client channel's event loop except {@link #engineWritable}.
 */
public final class Session {
    private final Shared shared;
    private final Owner context;
    private final Policy effective;
    private final String id;
    private final Quotas usage;
    /** Attach mode: engine-side back-pressure flag, written from the engine thread. */
    private volatile boolean engineWritable = true;
    private Channel client;
    /** Set when the engine aborted the connection; used as the audit close reason. */
    private volatile String clientAbortReason;

    public Session(Shared shared, Owner context, String id) {
        this.shared = shared;
        this.context = context;
        this.effective = shared.gatekeeper().effective(context);
        this.id = id;
        this.usage = shared.quotas(context);
    }

    /** The operator's settings. */
    public Settings config() {
        return shared.config();
    }

    public Shared shared() { return shared; }
    /** Who the connection belongs to. */
    public Owner context() { return context; }
    /** The connection's policy narrowed to the operator's ceiling, computed once. */
    public Policy effective() { return effective; }
    public String id() { return id; }
    /** The quotas the connection is counted against (its workspace's and its tenant's). */
    public Quotas usage() { return usage; }
    /** The client-facing channel; null until the pipeline is installed. Confined to that channel's loop once set. */
    public Channel client() { return client; }
    public void client(Channel c) { this.client = c; }

    /** Why the engine aborted the connection, or null; the audit close reason. */
    public String clientAbortReason() { return clientAbortReason; }
    public void clientAbortReason(String reason) { this.clientAbortReason = reason; }

    /** Attach mode: the engine can (or cannot) take more bytes for the guest; called from the engine's thread. */
    public void engineWritable(boolean writable) { this.engineWritable = writable; }

    /** Reports a decision to the context listener. Listener failures never affect the connection. */
    public void decided(String kind, String host, int port, String address, boolean allowed, String reason) {
        try {
            context.decisions().decided(id, kind, host, port, address, allowed, reason, Instant.now());
        } catch (RuntimeException e) {
            System.getLogger(Session.class.getName()).log(System.Logger.Level.WARNING, "decision listener failed", e);
        }
    }

    /** Closes this connection (and with it its upstream) because the grant it was opened under is gone. */
    public void revoke(String reason) {
        Channel c = client;
        if (c == null) return;
        c.eventLoop().execute(() -> {
            if (!c.isOpen()) return;
            if (clientAbortReason == null) clientAbortReason = reason;
            Downstream.abort(c, reason);
        });
    }

    /** Starts an audited exchange (one CONNECT tunnel or one HTTP request). */
    public Exchange exchange(String kind, String method, String host, int port) {
        return new Exchange(this, kind, method, host, port);
    }

    /** Can the client side take more bytes right now (socket writability and engine flag)? */
    public boolean clientWritable() {
        return client.isWritable() && engineWritable;
    }

    /** Upstream bootstrap on the client's loop, so a session's state is touched by one thread and a relay stays on it. */
    public Bootstrap upstream(ChannelInitializer<Channel> init) {
        return new Bootstrap()
                .group(shared.upstreamLoop(client))
                .channelFactory(shared.upstreamChannelFactory())
                .option(ChannelOption.CONNECT_TIMEOUT_MILLIS, (int) Math.min(Integer.MAX_VALUE, config().connectTimeout().toMillis()))
                .option(ChannelOption.AUTO_READ, false)
                .option(ChannelOption.ALLOW_HALF_CLOSURE, true)
                .option(ChannelOption.TCP_NODELAY, true)
                .option(ChannelOption.RCVBUF_ALLOCATOR, Shared.upstreamReads())
                .handler(new ChannelInitializer<Channel>() {
                    @Override
                    protected void initChannel(Channel ch) {
                        shared.track(ch);
                        ch.pipeline().addLast(init);
                    }
                });
    }

    /** One audited unit. {@link #finish} writes the audit record exactly once. */
    public static final class Exchange {
        private final Session session;
        private final String kind;
        private final String method;
        private final String host;
        private final int port;
        private final long startNanos = System.nanoTime();
        private String address;
        private boolean allowed;
        private String reason;
        private long bytesUp;
        private long bytesDown;
        private boolean holdsUpstreamSlot;
        private boolean finished;

        Exchange(Session session, String kind, String method, String host, int port) {
            this.session = session;
            this.kind = kind;
            this.method = method;
            this.host = host;
            this.port = port;
        }

        /** Records the decision (listener now, audit at finish). */
        public void decide(boolean allowed, String address, String reason) {
            this.allowed = allowed;
            this.address = address;
            this.reason = reason;
            session.decided(kind, host, port, address, allowed, reason);
        }

        public void finish(String closeReason) {
            if (finished) return;
            finished = true;
            if (reason == null) {
                // Ended before its decision (e.g. a malformed chunked body while the name was still resolving):
                // a denial, and every decision carries a reason.
                allowed = false;
                reason = closeReason == null ? "ended before a decision was made" : closeReason;
            }
            if (holdsUpstreamSlot) {
                holdsUpstreamSlot = false;
                session.usage.closed();
            }
            Owner c = session.context;
            session.shared.audit().record(new AuditRecord("decision", Instant.now(), c.workspaceId(), c.runId(), session.id, kind,
                    method, host, port, address, allowed ? "allow" : "deny", reason, bytesUp, bytesDown,
                    (System.nanoTime() - startNanos) / 1_000_000, closeReason));
        }

        public boolean finished() {
            return finished;
        }

        public String host() { return host; }
        public int port() { return port; }
        /** The address dialed (or refused), or null before the gatekeeper answered. */
        public String address() { return address; }
        public void address(String a) { this.address = a; }
        /** The decision's reason, or null before the decision. */
        public String reason() { return reason; }
        public void addUp(long n) { bytesUp += n; }
        public void addDown(long n) { bytesDown += n; }
        /** The exchange took one of its workspace's upstream slots; {@link #finish} gives it back. */
        public void holdUpstreamSlot() { holdsUpstreamSlot = true; }
    }
}
