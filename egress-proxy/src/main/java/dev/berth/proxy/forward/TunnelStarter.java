package dev.berth.proxy.forward;

import dev.berth.proxy.http.RequestDecoder;
import dev.berth.proxy.http.RequestHead;
import dev.berth.proxy.http.Responses;
import dev.berth.proxy.net.HostNames;
import dev.berth.proxy.net.Targets;
import dev.berth.proxy.policy.RegistryRule;
import dev.berth.proxy.policy.SecretBinding;
import dev.berth.proxy.session.Downstream;
import dev.berth.proxy.session.Gatekeeper;
import dev.berth.proxy.session.Quotas;
import dev.berth.proxy.session.Session;
import dev.berth.proxy.session.Settings;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpVersion;
import java.net.InetSocketAddress;
import java.util.List;

/**
 * CONNECT handling up to the point where bytes flow: target/Host checks, the gatekeeper
 * decision, quota, dialing the vetted address, the 200 response, and the pipeline switch from
 * HTTP parsing to {@link Relay} (which still gates on the TLS ClientHello for port 443).
 */
final class TunnelStarter {
    private final Forwarding services;
    private final Session session;
    private final ChannelHandlerContext ctx;
    private final RequestDecoder decoder;
    private Session.Exchange ex;
    private long headBytes;

    TunnelStarter(Forwarding services, Session session, ChannelHandlerContext ctx, RequestDecoder decoder) {
        this.services = services;
        this.session = session;
        this.ctx = ctx;
        this.decoder = decoder;
    }

    void start(RequestHead head) {
        Channel client = ctx.channel();
        client.config().setAutoRead(false);
        Targets.Target target;
        try {
            target = Targets.authority(head.target, 0, "CONNECT target");
            List<String> hosts = head.all("Host");
            if (hosts.size() > 1) throw new Targets.BadTarget("multiple Host headers " + hosts);
            if (hosts.size() == 1) {
                Targets.Target h = Targets.authority(hosts.get(0), target.port(), "Host header");
                if (!sameHost(h, target)) {
                    throw new Targets.BadTarget("Host header '" + HostNames.printable(hosts.get(0))
                            + "' does not match CONNECT target '" + HostNames.printable(head.target) + "'");
                }
            }
        } catch (Targets.BadTarget e) {
            refuse(session.exchange("connect", "CONNECT", HostNames.printable(head.target), 0), 400, e.getMessage());
            return;
        }
        headBytes = head.wireBytes();
        String shownHost = canonicalOrRaw(target.host());
        ex = session.exchange("connect", "CONNECT", shownHost, target.port());
        session.shared().gatekeeper().decide(session, target.host(), target.port())
                .whenComplete((v, err) -> client.eventLoop().execute(() -> vetted(v)));
    }

    static boolean sameHost(Targets.Target a, Targets.Target b) {
        return a.port() == b.port() && canonicalOrRaw(a.host()).equals(canonicalOrRaw(b.host()));
    }

    static String canonicalOrRaw(String raw) {
        try {
            return HostNames.normalize(raw).canonical();
        } catch (HostNames.InvalidHostException e) {
            return HostNames.printable(raw);
        }
    }

    private void refuse(Session.Exchange e, int status, String reason) {
        e.decide(false, null, reason);
        e.finish("denied");
        Responses.send(ctx.channel(), status, reason, false).addListener(ChannelFutureListener.CLOSE);
    }

    private void vetted(Gatekeeper.Vetted v) {
        Channel client = ctx.channel();
        if (!client.isActive()) {
            ex.decide(v.allowed(), v.addressText(), v.reason());
            ex.finish("client closed before decision");
            return;
        }
        if (!v.allowed()) {
            refuse(ex, 403, v.reason());
            return;
        }
        // an intercepted CONNECT dials nothing itself: its requests' upstream dials take the connection tokens
        boolean intercepted = session.config().tlsPorts().contains(v.port())
                && (!services.credentials().bindingsFor(session.context(), v.host()).isEmpty() || session.config().registryRule(v.host()) != null);
        Quotas.Admission turn = session.usage().admit(!intercepted);
        if (turn.refused()) {
            refuse(ex, 429, turn.refusal());
            return;
        }
        if (turn.waitNanos() > 0) {
            // shaped, not refused: the setup waits for its turn (bounded by maxShapingDelayMs) and then goes on
            Gatekeeper.Vetted waited = new Gatekeeper.Vetted(true, v.host(), v.port(), v.address(), v.reason() + "; waited "
                    + Math.max(1, turn.waitNanos() / 1_000_000) + " ms for its turn (" + turn.limit() + ")");
            session.shared().delays().after(client.eventLoop(), turn.waitNanos(), () -> admitted(waited));
            return;
        }
        admitted(v);
    }

    /** The CONNECT's turn came: interception or a plain tunnel. */
    private void admitted(Gatekeeper.Vetted v) {
        Channel client = ctx.channel();
        if (!client.isActive()) {
            ex.decide(true, v.addressText(), v.reason());
            ex.finish("client closed while waiting for its turn");
            return;
        }
        session.usage().addBytes(headBytes + 39); // the CONNECT head and our 200
        if (session.config().tlsPorts().contains(v.port())) {
            List<SecretBinding> bound = services.credentials().bindingsFor(session.context(), v.host());
            RegistryRule rule = session.config().registryRule(v.host());
            if (!bound.isEmpty() || rule != null) {
                intercept(v, bound, rule);
                return;
            }
        }
        int max = session.config().maxTunnelsPerWorkspace();
        if (!session.usage().tryOpen(max)) {
            refuse(ex, 429, "workspace '" + session.context().workspaceId() + "' already has " + max
                    + " open upstream connections (maxTunnelsPerWorkspace)");
            return;
        }
        ex.holdUpstreamSlot();
        boolean tls = session.config().tlsPorts().contains(v.port());
        if (!tls) ex.decide(true, v.addressText(), v.reason());
        ex.address(v.addressText());
        // Dial exactly the vetted InetAddress: no hostname reaches the socket layer, so DNS
        // cannot be consulted again between the check and the connect.
        ChannelFuture cf = session.upstream(new ChannelInitializer<>() {
            @Override
            protected void initChannel(Channel ch) {}
        }).connect(new InetSocketAddress(v.address(), v.port()));
        cf.addListener((ChannelFutureListener) f -> client.eventLoop().execute(() -> {
            if (!f.isSuccess()) {
                if (tls) ex.decide(true, v.addressText(), v.reason());
                String why = "upstream connect to " + v.addressText() + ":" + v.port() + " failed: " + f.cause().getMessage();
                ex.finish(why);
                Responses.send(client, 502, why, false).addListener(ChannelFutureListener.CLOSE);
                return;
            }
            established(f.channel(), v, tls);
        }));
    }

    /**
     * Terminates TLS instead of tunnelling: answers 200 without dialing (each inner request is
     * decided and dialed on its own), then parses the connection as HTTPS requests to this host.
     */
    private void intercept(Gatekeeper.Vetted v, List<SecretBinding> bound, RegistryRule rule) {
        Channel client = ctx.channel();
        ex.address(v.addressText());
        String why = v.reason();
        if (!bound.isEmpty()) {
            why += "; TLS intercepted for credential injection (binding" + (bound.size() > 1 ? "s " : " ")
                    + String.join(", ", bound.stream().map(b -> "'" + b.name() + "'").toList()) + ")";
        }
        if (rule != null) why += "; TLS intercepted for " + rule.kind().label() + " registry rules";
        Interception in = new Interception(v.host(), v.port(), ex, why);
        client.closeFuture().addListener(f -> {
            if (!ex.finished()) {
                if (ex.reason() == null) ex.decide(false, ex.address(), "client closed before sending a complete TLS ClientHello");
                ex.finish(session.clientAbortReason() != null ? session.clientAbortReason() : in.closeReason != null ? in.closeReason : "complete");
            }
        });
        client.writeAndFlush(new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, new HttpResponseStatus(200, "Connection established")))
                .addListener((ChannelFutureListener) f -> {
                    if (!f.isSuccess()) return;
                    var p = client.pipeline();
                    Settings c = session.config();
                    RequestDecoder inner = new RequestDecoder(c.maxHeaderBytes(), c.maxHeaderCount(), c.headerTimeout().toMillis());
                    p.addAfter("decoder", "tls-gate", new Interception.Gate(session, in));
                    p.addAfter("tls-gate", "https-decoder", inner);
                    if (!(client instanceof io.netty.channel.socket.DuplexChannel)) {
                        // Attach mode: control signals must bypass the SslHandler (it only takes bytes).
                        p.addAfter("https-decoder", "signals", new Downstream.SignalBypass());
                    }
                    p.replace(ctx.handler(), "frontend", new FrontendHandler(services, session, inner, in));
                    // Removing the CONNECT decoder forwards bytes it already buffered (an eager
                    // ClientHello) to the gate, in order.
                    p.remove(decoder);
                    client.config().setAutoRead(true);
                });
    }

    private void established(Channel upstream, Gatekeeper.Vetted v, boolean tls) {
        Channel client = ctx.channel();
        if (!client.isActive()) {
            upstream.close();
            if (tls) ex.decide(true, v.addressText(), v.reason());
            ex.finish("client closed before tunnel was established");
            return;
        }
        Relay.State state = new Relay.State();
        Relay down = new Relay(session, ex, client, false, state, null, null);
        Relay up = new Relay(session, ex, upstream, true, state, tls ? v.host() : null, v.reason());
        state.clientSide = up;
        state.upstreamSide = down;
        upstream.pipeline().addLast("relay", down);
        client.writeAndFlush(new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, new HttpResponseStatus(200, "Connection established")))
                .addListener((ChannelFutureListener) f -> {
                    if (!f.isSuccess()) {
                        upstream.close();
                        return;
                    }
                    var p = client.pipeline();
                    p.addAfter(ctx.name(), "relay", up);
                    p.remove("encoder");
                    p.remove(ctx.handler());
                    // Removing the decoder forwards any bytes it already buffered (e.g. an eagerly
                    // sent ClientHello) to the relay, in order.
                    p.remove(decoder);
                    // autoRead stays off on both sides; Relay requests each read batch itself.
                    up.resume();
                    if (!tls) down.resume();
                });
    }
}
