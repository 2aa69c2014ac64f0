package dev.berth.proxy;

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
 * <p>Flow per request: URI and Host checks, client reads paused, gatekeeper decision, then the
 * request head is re-serialized (origin-form, hop-by-hop and Proxy-* stripped, Host rebuilt from
 * the vetted URI) and the already-validated body bytes follow verbatim. The upstream connection
 * is reused only for the same host, port and vetted address.
 */
final class HttpForwarder {
    private static final Set<String> HOP_BY_HOP = Set.of("connection", "keep-alive", "proxy-connection", "te", "trailer", "upgrade", "host");
    private static final Set<String> FRAMING = Set.of("content-length", "transfer-encoding");

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

    HttpForwarder(Session session, ChannelHandlerContext ctx, RequestDecoder decoder) {
        this.session = session;
        this.ctx = ctx;
        this.decoder = decoder;
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
        Targets.Target target;
        try {
            target = Targets.absolute(h.target);
            List<String> hosts = h.all("Host");
            if (hosts.size() > 1) throw new Targets.BadTarget("multiple Host headers " + hosts);
            if (hosts.isEmpty() && h.version.equals("HTTP/1.1")) throw new Targets.BadTarget("HTTP/1.1 request without Host header");
            if (hosts.size() == 1) {
                Targets.Target ht = Targets.authority(hosts.get(0), 80, "Host header");
                if (!TunnelStarter.sameHost(ht, target)) {
                    throw new Targets.BadTarget("Host header '" + HostNames.printable(hosts.get(0)) + "' does not match request URI host '"
                            + TunnelStarter.canonicalOrRaw(target.host()) + "' port " + target.port());
                }
            }
        } catch (Targets.BadTarget e) {
            ex = session.exchange("http", h.method, null, 0);
            deny(400, e.getMessage());
            return;
        }
        originForm = target.originForm();
        ex = session.exchange("http", h.method, TunnelStarter.canonicalOrRaw(target.host()), target.port());
        Session.Exchange mine = ex;
        session.shared.gatekeeper().decide(session.effective, target.host(), target.port())
                .whenComplete((v, err) -> client.eventLoop().execute(() -> vetted(mine, v)));
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
        ex.bytesUp += n;
        if (!session.usage.addBytes(n, session.config().maxBytesPerWorkspace())) {
            b.content().release();
            abort("workspace '" + session.context.workspaceId() + "' exceeded its byte quota of "
                    + session.config().maxBytesPerWorkspace() + " bytes (maxBytesPerWorkspace)");
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
        ex.decide(false, ex.address, reason);
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

    private void vetted(Session.Exchange mine, Gatekeeper.Vetted v) {
        if (ex != mine) return;
        Channel client = ctx.channel();
        if (!client.isActive()) {
            ex.decide(v.allowed(), v.addressText(), v.reason());
            ex.finish("client closed before decision");
            ex = null;
            releasePending();
            return;
        }
        if (!v.allowed()) {
            ex.address = v.addressText();
            deny(403, v.reason());
            return;
        }
        String key = v.host() + ":" + v.port() + "@" + v.addressText();
        ex.address = v.addressText();
        if (upstream != null && upstream.isActive() && key.equals(upstreamKey) && upstreamHandler.reusable) {
            ex.decide(true, v.addressText(), v.reason() + "; reusing upstream connection");
            send(v);
            return;
        }
        if (upstream != null) upstream.close();
        int max = session.config().maxTunnelsPerWorkspace();
        if (!session.usage.tryOpen(max)) {
            deny(429, "workspace '" + session.context.workspaceId() + "' already has " + max
                    + " open upstream connections (maxTunnelsPerWorkspace)");
            return;
        }
        ex.decide(true, v.addressText(), v.reason());
        UpstreamResponseHandler handler = new UpstreamResponseHandler(this);
        // Connect to the vetted InetAddress only; the name is never resolved again.
        var cf = session.upstream(new ChannelInitializer<>() {
            @Override
            protected void initChannel(Channel ch) {
                ch.pipeline().addLast("decoder", handler.decoder());
                ch.pipeline().addLast(session.sessionExecutor(), "handler", handler);
            }
        }).connect(new InetSocketAddress(v.address(), v.port()));
        upstream = cf.channel();
        upstreamKey = key;
        upstreamHandler = handler;
        cf.channel().closeFuture().addListener(f -> session.usage.closed());
        cf.addListener((ChannelFutureListener) f -> ctx.executor().execute(() -> {
            if (ex != mine) return;
            if (!f.isSuccess()) {
                String why = "upstream connect to " + v.addressText() + ":" + v.port() + " failed: " + f.cause().getMessage();
                failBeforeResponse(502, why);
                return;
            }
            send(v);
        }));
    }

    private void send(Gatekeeper.Vetted v) {
        List<String[]> headers = forwardedHeaders(head);
        session.shared.forwardHook().beforeForward(session.context, v.host(), v.port(), headers);
        StringBuilder sb = new StringBuilder(256);
        sb.append(head.method).append(' ').append(originForm).append(" HTTP/1.1\r\n");
        String hostText = v.host().indexOf(':') >= 0 ? "[" + v.host() + "]" : v.host();
        sb.append("Host: ").append(hostText).append(v.port() == 80 ? "" : ":" + v.port()).append("\r\n");
        for (String[] h : headers) sb.append(h[0]).append(": ").append(h[1]).append("\r\n");
        sb.append("\r\n");
        ByteBuf buf = ByteBufUtil.encodeString(upstream.alloc(), java.nio.CharBuffer.wrap(sb), java.nio.charset.StandardCharsets.ISO_8859_1);
        upstreamHandler.expect(head.method.equals("HEAD"));
        upstream.write(buf, upstream.voidPromise());
        forwarding = true;
        for (RequestHead.Body b : pending) write(b);
        pending.clear();
        upstream.flush();
        upstreamHandler.resume(); // response reads are requested batch by batch
        if (upstream.isWritable()) ctx.channel().config().setAutoRead(true);
    }

    static List<String[]> forwardedHeaders(RequestHead head) {
        Set<String> listed = new HashSet<>();
        for (String v : head.all("Connection")) {
            for (String t : v.split(",")) listed.add(t.trim().toLowerCase(Locale.ROOT));
        }
        List<String[]> out = new ArrayList<>();
        for (String[] h : head.headers) {
            String lower = h[0].toLowerCase(Locale.ROOT);
            if (FRAMING.contains(lower)) {
                out.add(h); // never strippable: the body bytes that follow depend on them
                continue;
            }
            if (HOP_BY_HOP.contains(lower) || lower.startsWith("proxy-") || listed.contains(lower)) continue;
            out.add(h);
        }
        return out;
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
            ex.finish(session.clientAbortReason != null ? session.clientAbortReason : "client closed");
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
