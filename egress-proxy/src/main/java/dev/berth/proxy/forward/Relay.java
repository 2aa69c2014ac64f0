package dev.berth.proxy.forward;

import dev.berth.proxy.net.HostNames;
import dev.berth.proxy.session.Downstream;
import dev.berth.proxy.session.Session;
import dev.berth.proxy.session.Shared;
import dev.berth.proxy.tls.ClientHelloParser;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.CompositeByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.socket.ChannelInputShutdownEvent;
import io.netty.handler.timeout.IdleStateEvent;
import io.netty.util.ReferenceCountUtil;
import io.netty.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * Byte pump for one direction of a CONNECT tunnel. Installed on the channel it reads from,
 * writes to {@code peer}. Back-pressure: stops reading when the peer is not writable (for the
 * attach client also when the engine said so) and resumes on writability change. Half-close is
 * propagated; the tunnel closes when both directions are done or either side dies.
 *
 * <p>The client-to-upstream instance optionally starts as an SNI gate: it buffers the first TLS
 * record, checks the ClientHello's server_name against the CONNECT host, and only then lets the
 * upstream see a byte.
 */
final class Relay extends ChannelInboundHandlerAdapter {
    /** Shared by both directions of one tunnel. */
    static final class State {
        Relay clientSide;
        Relay upstreamSide;
        int halfClosed;
        String closeReason;
    }

    private final Session session;
    private final Session.Exchange ex;
    private final Channel peer;
    private final boolean fromClient;
    private final State state;
    private String sniHost;
    private final String allowReason;
    private CompositeByteBuf gateBuf;
    private ScheduledFuture<?> gateTimer;
    private ChannelHandlerContext ctx;
    private boolean paused;

    Relay(Session session, Session.Exchange ex, Channel peer, boolean fromClient, State state, String sniHost, String allowReason) {
        this.session = session;
        this.ex = ex;
        this.peer = peer;
        this.fromClient = fromClient;
        this.state = state;
        this.sniHost = sniHost;
        this.allowReason = allowReason;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        this.ctx = ctx;
        if (sniHost != null) {
            gateBuf = ctx.alloc().compositeBuffer();
            long ms = session.config().headerTimeout().toMillis();
            gateTimer = ctx.executor().schedule(() -> {
                if (sniHost != null) deny("no complete TLS ClientHello within " + ms + " ms after CONNECT");
            }, ms, TimeUnit.MILLISECONDS);
        }
    }

    @Override
    public void handlerRemoved(ChannelHandlerContext ctx) {
        releaseGate();
    }

    private void releaseGate() {
        if (gateTimer != null) gateTimer.cancel(false);
        if (gateBuf != null) {
            gateBuf.release();
            gateBuf = null;
        }
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object msg) {
        if (!(msg instanceof ByteBuf buf)) {
            ReferenceCountUtil.release(msg);
            return;
        }
        if (sniHost != null) {
            gateBuf.addComponent(true, buf);
            checkClientHello();
            return;
        }
        forward(buf);
    }

    private void forward(ByteBuf buf) {
        int n = buf.readableBytes();
        if (fromClient) ex.addUp(n); else ex.addDown(n);
        String over = session.usage().addBytes(n);
        if (over != null) {
            buf.release();
            abortBoth(over);
            return;
        }
        peer.write(buf, peer.voidPromise());
    }

    private void checkClientHello() {
        ClientHelloParser.Result r = ClientHelloParser.parse(gateBuf);
        if (r.needMore()) {
            if (gateBuf.readableBytes() > ClientHelloParser.MAX_RECORD + 5) deny("TLS ClientHello too large");
            return;
        }
        String expected = sniHost;
        if (r.error() != null) {
            deny(r.error() + " (CONNECT host '" + expected + "')");
            return;
        }
        if (r.sni() == null && isIpLiteral(expected)) {
            // Clients never send SNI for IP literals (RFC 6066); the literal was explicitly allowlisted.
            pass("no SNI, as expected for IP-literal target '" + expected + "'");
            return;
        }
        if (r.sni() == null) {
            deny("TLS ClientHello has no SNI; CONNECT to '" + expected + "' requires server_name '" + expected + "'");
            return;
        }
        String sni;
        try {
            sni = HostNames.normalize(r.sni()).canonical();
        } catch (HostNames.InvalidHostException e) {
            deny("TLS SNI is invalid: " + e.getMessage());
            return;
        }
        if (!sni.equals(expected)) {
            deny("TLS SNI '" + HostNames.printable(sni) + "' does not match CONNECT host '" + expected + "'");
            return;
        }
        pass("TLS SNI matches");
    }

    private static boolean isIpLiteral(String host) {
        try {
            return HostNames.normalize(host).isLiteral();
        } catch (HostNames.InvalidHostException e) {
            return false;
        }
    }

    private void pass(String note) {
        sniHost = null;
        ex.decide(true, ex.address(), allowReason + "; " + note);
        ByteBuf pending = gateBuf;
        gateBuf = null;
        if (gateTimer != null) gateTimer.cancel(false);
        forward(pending);
        peer.flush();
        if (state.upstreamSide != null) state.upstreamSide.resume(); // upstream may now speak
    }

    private void deny(String reason) {
        if (ex.finished()) return;
        sniHost = null;
        releaseGate();
        ex.decide(false, ex.address(), reason);
        if (state.closeReason == null) state.closeReason = "denied";
        peer.close();
        Downstream.abort(ctx.channel(), reason);
    }

    private void abortBoth(String reason) {
        // First reason wins: the quota/idle cause, not the write errors that follow it.
        if (state.closeReason == null) state.closeReason = reason;
        peer.close();
        Channel client = fromClient ? ctx.channel() : peer;
        Downstream.abort(client, reason);
        ctx.channel().close();
    }

    /**
     * Flow control: autoRead is switched off in channelReadComplete if the peer is full. Both channels of a relay run
     * on one loop (the upstream is put on its client's loop, {@link Shared#upstreamLoop}), so that runs right after
     * the batch and read-ahead is one batch.
     */
    @Override
    public void channelReadComplete(ChannelHandlerContext ctx) {
        peer.flush();
        if (sniHost == null && !peerWritable()) {
            paused = true;
            ctx.channel().config().setAutoRead(false);
        }
    }

    /** Start or resume reading our channel if the peer can take data. */
    void resume() {
        if (ctx == null) return;
        // The upstream stays unread until the client's ClientHello has passed the SNI gate.
        if (!fromClient && state.clientSide != null && state.clientSide.sniHost != null) return;
        if (peerWritable()) {
            paused = false;
            ctx.channel().config().setAutoRead(true);
        }
    }

    private boolean peerWritable() {
        return fromClient ? peer.isWritable() : session.clientWritable();
    }

    /** Called when our own channel's writability changes: the other relay may resume reading. */
    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
        resumeOther();
        ctx.fireChannelWritabilityChanged();
    }

    private void resumeOther() {
        Relay other = fromClient ? state.upstreamSide : state.clientSide;
        if (other != null && other.paused) other.resume();
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object evt) {
        if (evt instanceof ChannelInputShutdownEvent) {
            if (sniHost != null) {
                deny("client closed before sending a complete TLS ClientHello");
                return;
            }
            // Our reader hit EOF: pass the FIN on, keep the other direction running.
            peer.writeAndFlush(Unpooled.EMPTY_BUFFER).addListener(f -> Downstream.shutdownOutput(peer));
            if (++state.halfClosed == 2) {
                if (state.closeReason == null) state.closeReason = "complete";
                Channel client = fromClient ? ctx.channel() : peer;
                Channel upstream = fromClient ? peer : ctx.channel();
                upstream.close();
                Downstream.closeGracefully(client); // an attach client's peer may not have read everything yet
            }
        } else if (evt instanceof IdleStateEvent) {
            abortBoth("idle timeout (" + session.config().idleTimeout().toMillis() + " ms without traffic)");
        } else if (evt instanceof Downstream.Writability) {
            // Engine back-pressure on the attach client: re-evaluate the upstream reader.
            Relay other = state.upstreamSide;
            if (other != null && other.paused) other.resume();
        } else {
            ctx.fireUserEventTriggered(evt);
        }
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        if (state.closeReason == null) {
            state.closeReason = session.clientAbortReason() != null ? session.clientAbortReason() : fromClient ? "client closed" : "upstream closed";
        }
        if (peer.isActive()) {
            if (fromClient) {
                peer.writeAndFlush(Unpooled.EMPTY_BUFFER).addListener(ChannelFutureListener.CLOSE);
            } else {
                Downstream.closeGracefully(peer);
            }
        }
        if (sniHost != null && !ex.finished()) {
            ex.decide(false, ex.address(), "client closed before sending a complete TLS ClientHello");
        }
        ex.finish(state.closeReason);
        ctx.fireChannelInactive();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        abortBoth((fromClient ? "client" : "upstream") + " error: " + cause.getMessage());
    }
}
