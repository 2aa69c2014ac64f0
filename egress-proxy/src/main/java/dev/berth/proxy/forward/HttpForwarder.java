package dev.berth.proxy.forward;

import dev.berth.proxy.credentials.CredentialRegistry;
import dev.berth.proxy.http.ContentCodings;
import dev.berth.proxy.http.RequestDecoder;
import dev.berth.proxy.http.RequestHead;
import dev.berth.proxy.http.Responses;
import dev.berth.proxy.net.Targets;
import dev.berth.proxy.policy.RegistryGate;
import dev.berth.proxy.policy.RegistryPaths;
import dev.berth.proxy.policy.RegistryRule;
import dev.berth.proxy.session.Downstream;
import dev.berth.proxy.session.Gatekeeper;
import dev.berth.proxy.session.Quotas;
import dev.berth.proxy.session.Session;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.ByteBufUtil;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInitializer;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * Plain-HTTP forwarding (absolute-form requests), one request at a time per client connection,
 * each with its own decision: a keep-alive connection cannot carry a second request to a
 * different host on the strength of the first one's decision.
 *
 * <p>Flow per request: URI and Host checks, client reads paused, gatekeeper decision, credential
 * placeholder substitution (or refusal), then the request head is re-serialized (origin-form,
 * hop-by-hop and Proxy-* stripped, Host rebuilt from the vetted URI) and the already-validated
 * body bytes follow verbatim. The upstream connection is reused only for the same host, port and
 * vetted address.
 *
 * <p>HTTPS mode ({@code interception != null}): the requests come out of a TLS connection the
 * proxy terminated for one CONNECT host. Targets must be origin-form and Host must name that
 * host; the upstream is a verified TLS client connection to the vetted address, and the request
 * is written only after its handshake succeeded.
 */
final class HttpForwarder {
    private final Forwarding services;
    final Session session;
    private final ChannelHandlerContext ctx;
    private final RequestDecoder decoder;
    private final List<RequestHead.Body> pending = new ArrayList<>();
    private Channel upstream;
    private String upstreamKey;
    private UpstreamResponseHandler upstreamHandler;
    Session.Exchange ex;
    RequestHead head;
    private String originForm;
    private boolean forwarding;
    private boolean requestDone;
    boolean closeAfter;
    private final Interception interception;
    /** The current request after placeholder substitution; response heads are redacted against it. */
    private CredentialRegistry.Rewrite rewrite = CredentialRegistry.Rewrite.NONE;
    /** HTTPS mode: the decision waiting for the upstream TLS handshake. */
    private Gatekeeper.Vetted awaitingHandshake;

    HttpForwarder(Forwarding services, Session session, ChannelHandlerContext ctx, RequestDecoder decoder, Interception interception) {
        this.services = services;
        this.session = session;
        this.ctx = ctx;
        this.decoder = decoder;
        this.interception = interception;
    }

    /** The current request's upstream leg is TLS: intercepted HTTPS, or an absolute-form https:// request. */
    private boolean tls;

    private String kind() {
        return tls ? "https" : "http";
    }

    boolean busy() {
        return ex != null;
    }

    Channel client() {
        return ctx.channel();
    }

    void onHead(RequestHead h) {
        Channel client = ctx.channel();
        client.config().setAutoRead(false);
        head = h;
        requestDone = !h.hasBody();
        closeAfter = h.wantsClose();
        rewrite = CredentialRegistry.Rewrite.NONE;
        tls = interception != null || Targets.isHttps(h.target);
        Targets.Target target;
        try {
            target = interception != null ? ForwardedRequest.interceptedTarget(h, interception) : ForwardedRequest.absoluteTarget(h);
        } catch (Targets.BadTarget e) {
            ex = interception == null ? session.exchange(kind(), h.method, null, 0)
                    : session.exchange("https", h.method, interception.host, interception.port);
            deny(400, e.getMessage());
            return;
        }
        originForm = target.originForm();
        ex = session.exchange(kind(), h.method, TunnelStarter.canonicalOrRaw(target.host()), target.port());
        Session.Exchange mine = ex;
        session.shared().gatekeeper().decide(session, target.host(), target.port())
                .whenComplete((v, err) -> client.eventLoop().execute(() -> vetted(mine, v, false)));
    }

    void onBody(RequestHead.Body b) {
        if (b.last()) requestDone = true;
        if (ex == null) {
            b.content().release();
        } else if (!forwarding) {
            pending.add(b);
        } else {
            write(b);
        }
    }

    private void write(RequestHead.Body b) {
        int n = b.content().readableBytes();
        ex.addUp(n);
        String over = session.usage().addBytes(n);
        if (over != null) {
            b.content().release();
            abort(over);
            return;
        }
        upstream.write(b.content(), upstream.voidPromise());
        if (b.last() || !upstream.isWritable()) upstream.flush();
        // Decide from the state *after* the flush: the flush may already have drained the buffer
        // and fired the writability event, and a stale "false" here would stall the body forever.
        if (!upstream.isWritable()) ctx.channel().config().setAutoRead(false);
    }

    private void deny(int status, String reason) {
        Channel client = ctx.channel();
        ex.decide(false, ex.address(), reason);
        ex.finish("denied");
        ex = null;
        releasePending();
        // Keep the connection only if the request is fully consumed; otherwise its unread body
        // would be parsed as the next request.
        boolean keep = requestDone && !closeAfter;
        var f = Responses.send(client, status, reason, keep);
        if (keep) {
            decoder.resume(ctx.pipeline().context(decoder));
            client.config().setAutoRead(true);
        } else {
            f.addListener(ChannelFutureListener.CLOSE);
        }
    }

    private void vetted(Session.Exchange mine, Gatekeeper.Vetted v, boolean waited) {
        if (ex != mine) return;
        Channel client = ctx.channel();
        if (!client.isActive()) {
            closedBeforeDecision(v);
            return;
        }
        if (!v.allowed()) {
            ex.address(v.addressText());
            deny(403, v.reason());
            return;
        }
        Quotas.Admission turn = session.usage().admit(false);
        if (turn.refused()) {
            ex.address(v.addressText());
            deny(429, turn.refusal());
            return;
        }
        if (turn.waitNanos() > 0 && !waited) { // the byte quota comes back within the bound: wait for it, then go on
            session.shared().delays().after(ctx.executor(), turn.waitNanos(), () -> vetted(mine, v, true));
            return;
        }
        RegistryRule rule = session.config().registryRule(v.host());
        RegistryGate.Verdict gate = rule == null ? null : RegistryGate.check(rule, v.host(), head.method, originForm, services.supply().active(rule));
        if (gate != null && gate.refused()) {
            ex.address(v.addressText());
            deny(gate.status(), gate.reason());
            return;
        }
        if (gate != null) originForm = gate.target(); // what the rules checked is what the upstream gets
        filtering = null;
        RegistryPaths.Request rq = gate == null ? null : gate.request();
        if (rq != null && rq.type() == RegistryPaths.Type.VERSION) {
            ex.address(v.addressText());
            services.supply().checkVersion(session, v, tls, rule, rq).whenComplete((why, err) -> ctx.executor().execute(() -> {
                if (ex != mine) return;
                if (!client.isActive()) {
                    closedBeforeDecision(v);
                    return;
                }
                String refused = err != null ? "release-age check failed: " + err.getMessage() : why;
                if (refused != null) deny(403, refused); else proceed(mine, v);
            }));
            return;
        }
        if (rq != null) filtering = new Filtering(rule, rq, v);
        proceed(mine, v);
    }

    private void closedBeforeDecision(Gatekeeper.Vetted v) {
        ex.decide(v.allowed(), v.addressText(), v.reason());
        ex.finish("client closed before decision");
        ex = null;
        releasePending();
    }


    /** The current request's metadata filter, or null. */
    Filtering filtering;

    /** The rest of {@link #vetted}: credentials, then the upstream (reused or dialed). */
    private void proceed(Session.Exchange mine, Gatekeeper.Vetted v) {
        Channel client = ctx.channel();
        String key = (tls ? "https://" : "http://") + v.host() + ":" + v.port() + "@" + v.addressText();
        ex.address(v.addressText());
        rewrite = services.credentials().rewrite(session.context(), v.host(), tls, originForm, ForwardedRequest.forwardedHeaders(head));
        if (rewrite.refusal() != null) {
            String why = rewrite.refusal();
            rewrite = CredentialRegistry.Rewrite.NONE;
            deny(403, why);
            return;
        }
        String injected = rewrite.reasonSuffix();
        if (upstream != null && upstream.isActive() && key.equals(upstreamKey) && upstreamHandler.reusable) {
            ex.decide(true, v.addressText(), v.reason() + "; reusing upstream connection" + injected);
            send(v);
            return;
        }
        if (upstream != null) upstream.close();
        Quotas.Admission turn = session.usage().admit(true);
        if (turn.refused()) {
            deny(429, turn.refusal());
            return;
        }
        if (turn.waitNanos() > 0) { // shaped: the dial waits for its turn, then goes on
            String waited = "; waited " + Math.max(1, turn.waitNanos() / 1_000_000) + " ms for its turn (" + turn.limit() + ")";
            session.shared().delays().after(ctx.executor(), turn.waitNanos(), () -> {
                if (ex == mine && ctx.channel().isActive()) dial(mine, v, injected + waited);
            });
            return;
        }
        dial(mine, v, injected);
    }

    /** A new upstream connection for the current request, once its turn came. */
    private void dial(Session.Exchange mine, Gatekeeper.Vetted v, String injected) {
        String key = (tls ? "https://" : "http://") + v.host() + ":" + v.port() + "@" + v.addressText();
        int max = session.config().maxTunnelsPerWorkspace();
        if (!session.usage().tryOpen(max)) {
            deny(429, "workspace '" + session.context().workspaceId() + "' already has " + max
                    + " open upstream connections (maxTunnelsPerWorkspace)");
            return;
        }
        ex.decide(true, v.addressText(), v.reason() + injected);
        UpstreamResponseHandler handler = new UpstreamResponseHandler(this);
        boolean tls = this.tls;
        // Connect to the vetted InetAddress only; the name is never resolved again.
        var cf = session.upstream(new ChannelInitializer<>() {
            @Override
            protected void initChannel(Channel ch) {
                if (tls) {
                    // SNI = host, hostname verification on, JDK trust store + upstreamTrustFiles.
                    ch.pipeline().addLast("tls", session.shared().upstreamTls().newHandler(ch.alloc(), v.host(), v.port()));
                }
                ch.pipeline().addLast("decoder", handler.decoder());
                ch.pipeline().addLast("handler", handler);
            }
        }).connect(new InetSocketAddress(v.address(), v.port()));
        upstream = cf.channel();
        upstreamKey = key;
        upstreamHandler = handler;
        cf.channel().closeFuture().addListener(f -> session.usage().closed());
        cf.addListener((ChannelFutureListener) f -> ctx.executor().execute(() -> {
            if (ex != mine) return;
            if (!f.isSuccess()) {
                String why = "upstream connect to " + v.addressText() + ":" + v.port() + " failed: " + f.cause().getMessage();
                failBeforeResponse(502, why);
                return;
            }
            if (tls) {
                awaitingHandshake = v; // the handler reports the handshake outcome
            } else {
                send(v);
            }
        }));
    }

    /** HTTPS mode: the upstream TLS handshake finished (failure != null: refused certificate, timeout...). */
    void upstreamHandshake(Channel ch, Throwable failure) {
        if (ch != upstream || ex == null || forwarding) return;
        if (failure != null) {
            String host = awaitingHandshake != null ? awaitingHandshake.host() : ex.host();
            awaitingHandshake = null;
            Throwable c = failure instanceof io.netty.handler.codec.DecoderException && failure.getCause() != null ? failure.getCause() : failure;
            failBeforeResponse(502, "upstream TLS verification failed for host " + host + ": " + c.getMessage());
            ch.close();
            return;
        }
        Gatekeeper.Vetted v = awaitingHandshake;
        awaitingHandshake = null;
        if (v != null) send(v);
    }

    private void send(Gatekeeper.Vetted v) {
        List<String[]> headers = rewrite.headers();
        // One use per request and binding, however often the placeholder occurs in it.
        Set<String> counted = new HashSet<>();
        for (CredentialRegistry.Injection i : rewrite.injected()) {
            if (counted.add(i.placeholder())) {
                i.grant().used(i.binding().name(), v.host());
                i.grant().usedBy(session);
            }
        }
        StringBuilder sb = new StringBuilder(256);
        sb.append(head.method).append(' ').append(rewrite.target()).append(" HTTP/1.1\r\n");
        String hostText = v.host().indexOf(':') >= 0 ? "[" + v.host() + "]" : v.host();
        int defaultPort = tls ? 443 : 80;
        sb.append("Host: ").append(hostText).append(v.port() == defaultPort ? "" : ":" + v.port()).append("\r\n");
        for (String[] h : headers) {
            if (filtering != null) {
                String lower = h[0].toLowerCase(Locale.ROOT);
                // Filtered metadata is always fetched whole: a 304 would let the client keep an unfiltered copy, and
                // an npm abbreviated packument has no publish times.
                if (lower.equals("if-none-match") || lower.equals("if-modified-since") || lower.equals("range") || lower.equals("if-range")) continue;
                if (lower.equals("accept") && filtering.rule().kind() == RegistryRule.Kind.NPM) continue;
            }
            sb.append(h[0]).append(": ").append(h[1]).append("\r\n");
        }
        if (filtering != null && filtering.rule().kind() == RegistryRule.Kind.NPM) sb.append("Accept: application/json\r\n");
        sb.append("\r\n");
        ByteBuf buf = ByteBufUtil.encodeString(upstream.alloc(), java.nio.CharBuffer.wrap(sb), java.nio.charset.StandardCharsets.ISO_8859_1);
        session.usage().addBytes(buf.readableBytes()); // heads count: the gate above refuses the next request
        upstreamHandler.expect(head.method.equals("HEAD"));
        upstream.write(buf, upstream.voidPromise());
        forwarding = true;
        for (RequestHead.Body b : pending) write(b);
        pending.clear();
        upstream.flush();
        upstreamHandler.resume(); // starts the response reads
        if (upstream.isWritable()) ctx.channel().config().setAutoRead(true);
    }

    /** Replaces configured secret values in response header values (an echoing server must not hand them back). */
    void redact(io.netty.handler.codec.http.HttpHeaders h) {
        CredentialRegistry reg = services.credentials();
        if (reg.isEmpty() || h.isEmpty()) return;
        for (String name : new java.util.ArrayList<>(h.names())) {
            List<String> values = h.getAll(name);
            List<String> out = new ArrayList<>(values.size());
            boolean changed = false;
            for (String val : values) {
                String r = reg.redact(val, rewrite);
                changed |= !r.equals(val);
                out.add(r);
            }
            if (changed) h.set(name, out);
        }
    }

    /**
     * A metadata response, held back whole (head prepared, body buffered): decode it, filter it, report what was
     * hidden, then send it with an exact Content-Length. Anything that stops the filter refuses the response (502):
     * passing it unfiltered would hand the client the versions it must not see.
     */
    void filterResponse(io.netty.handler.codec.http.HttpResponse r, byte[] raw, boolean reusable) {
        Session.Exchange mine = ex;
        Filtering f = filtering;
        String host = f.vetted().host();
        byte[] decoded;
        try {
            decoded = ContentCodings.decode(r.headers().get("Content-Encoding"), raw, session.config().maxMetadataBytes());
        } catch (java.io.IOException | RuntimeException e) {
            failBeforeResponse(502, f.rule().kind().label() + " metadata of " + f.request().pkg() + " from " + host + " could not be decoded: "
                    + e.getMessage());
            return;
        }
        services.supply().filter(session, f.vetted(), tls, f.rule(), f.request(), r.headers().get("Content-Type"), decoded)
                .whenComplete((res, err) -> ctx.executor().execute(() -> {
                    if (ex != mine) return;
                    if (err != null) {
                        Throwable c = err instanceof java.util.concurrent.CompletionException && err.getCause() != null ? err.getCause() : err;
                        failBeforeResponse(502, f.rule().kind().label() + " metadata of " + f.request().pkg() + " from " + host
                                + " was not filtered, so it is refused: " + (c.getMessage() == null ? c.toString() : c.getMessage()));
                        return;
                    }
                    if (!res.hidden().isEmpty()) f.report(session, ex, head.method, res.hidden());
                    var h = r.headers();
                    h.remove("Content-Encoding");
                    h.remove("Transfer-Encoding");
                    h.remove("Content-MD5");
                    if (!res.hidden().isEmpty()) h.remove("ETag"); // another body than the one the tag names
                    h.set("Content-Length", res.body().length);
                    ex.addDown(res.body().length);
                    Channel client = ctx.channel();
                    client.write(r, client.voidPromise());
                    client.write(new io.netty.handler.codec.http.DefaultLastHttpContent(io.netty.buffer.Unpooled.wrappedBuffer(res.body())),
                            client.voidPromise());
                    client.flush();
                    complete(reusable);
                }));
    }

    /** Upstream failed before any response byte reached the client: answer with status. */
    void failBeforeResponse(int status, String why) {
        if (ex == null) return;
        ex.finish(why);
        ex = null;
        releasePending();
        Responses.send(ctx.channel(), status, why, false).addListener(ChannelFutureListener.CLOSE);
    }

    /** The response to the current request was fully relayed. */
    void complete(boolean upstreamReusable) {
        ex.finish("complete");
        ex = null;
        forwarding = false;
        if (!upstreamReusable && upstream != null) upstream.close();
        if (!requestDone) closeAfter = true; // response ended before the request body: cannot resync
        Channel client = ctx.channel();
        if (closeAfter) {
            Downstream.closeGracefully(client);
        } else {
            decoder.resume(ctx.pipeline().context(decoder));
            client.config().setAutoRead(true);
        }
    }

    void abort(String reason) {
        if (ex != null) {
            ex.finish(reason);
            ex = null;
        }
        releasePending();
        if (upstream != null) upstream.close();
        Downstream.abort(ctx.channel(), reason);
    }

    /** Closes an idle kept-alive upstream (its slot is released by the close listener). */
    void releaseUpstream() {
        if (upstream != null) upstream.close();
        upstream = null;
    }

    void closeAfterResponse() {
        closeAfter = true;
    }

    void clientWritabilityChanged() {
        if (upstreamHandler != null && upstreamHandler.paused()) upstreamHandler.resume();
    }

    void upstreamWritabilityChanged() {
        if (forwarding && upstream != null && upstream.isWritable()) ctx.channel().config().setAutoRead(true);
    }

    void clientClosed() {
        if (ex != null) {
            ex.finish(session.clientAbortReason() != null ? session.clientAbortReason() : "client closed");
            ex = null;
        }
        releasePending();
        if (upstream != null) upstream.close();
    }

    boolean isCurrentUpstream(Channel ch) {
        return ch == upstream;
    }

    private void releasePending() {
        for (RequestHead.Body b : pending) b.content().release();
        pending.clear();
    }
}
