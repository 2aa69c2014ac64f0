package dev.berth.proxy;

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
final class Session {
    final Shared shared;
    final EgressContext context;
    final Policy effective;
    final String id;
    final WorkspaceUsage usage;
    /** Attach mode: engine-side back-pressure flag, written from the engine thread. */
    volatile boolean engineWritable = true;
    Channel client;
    /** Set when the engine aborted the connection; used as the audit close reason. */
    volatile String clientAbortReason;

    Session(Shared shared, EgressContext context, String id) {
        this.shared = shared;
        this.context = context;
        this.effective = shared.gatekeeper().effective(context);
        this.id = id;
        this.usage = shared.usage(context.workspaceId());
    }

    ProxyConfig config() {
        return shared.config();
    }

    /** Reports a decision to the context listener. Listener failures never affect the connection. */
    void decided(String kind, String host, int port, String address, boolean allowed, String reason) {
        try {
            context.listener().onDecision(new Decision(context.workspaceId(), context.runId(), id, kind, host, port,
                    address, allowed, reason, Instant.now()));
        } catch (RuntimeException e) {
            System.getLogger(Session.class.getName()).log(System.Logger.Level.WARNING, "decision listener failed", e);
        }
    }

    /** Closes this connection (and with it its upstream) because the grant it was opened under is gone. */
    void revoke(String reason) {
        Channel c = client;
        if (c == null) return;
        c.eventLoop().execute(() -> {
            if (!c.isOpen()) return;
            if (clientAbortReason == null) clientAbortReason = reason;
            Downstream.abort(c, reason);
        });
    }

    /** Starts an audited exchange (one CONNECT tunnel or one HTTP request). */
    Exchange exchange(String kind, String method, String host, int port) {
        return new Exchange(this, kind, method, host, port);
    }

    /** Can the client side take more bytes right now (socket writability and engine flag)? */
    boolean clientWritable() {
        return client.isWritable() && engineWritable;
    }

    /** Upstream bootstrap on the client's loop, so a session's state is touched by one thread and a relay stays on it. */
    Bootstrap upstream(ChannelInitializer<Channel> init) {
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
    static final class Exchange {
        final Session session;
        final String kind;
        final String method;
        final String host;
        final int port;
        final long startNanos = System.nanoTime();
        String address;
        boolean allowed;
        String reason;
        long bytesUp;
        long bytesDown;
        boolean holdsUpstreamSlot;
        private boolean finished;

        Exchange(Session session, String kind, String method, String host, int port) {
            this.session = session;
            this.kind = kind;
            this.method = method;
            this.host = host;
            this.port = port;
        }

        /** Records the decision (listener now, audit at finish). */
        void decide(boolean allowed, String address, String reason) {
            this.allowed = allowed;
            this.address = address;
            this.reason = reason;
            session.decided(kind, host, port, address, allowed, reason);
        }

        void finish(String closeReason) {
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
            EgressContext c = session.context;
            session.shared.audit().record(new AuditRecord("decision", Instant.now(), c.workspaceId(), c.runId(), session.id, kind,
                    method, host, port, address, allowed ? "allow" : "deny", reason, bytesUp, bytesDown,
                    (System.nanoTime() - startNanos) / 1_000_000, closeReason));
        }

        boolean finished() {
            return finished;
        }
    }
}
