package dev.berth.proxy.forward;

import dev.berth.proxy.net.HostNames;
import dev.berth.proxy.session.Downstream;
import dev.berth.proxy.session.Session;
import dev.berth.proxy.tls.ClientHelloParser;
import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelHandlerContext;
import io.netty.handler.codec.ByteToMessageDecoder;
import io.netty.handler.ssl.SslHandler;
import io.netty.util.concurrent.ScheduledFuture;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A CONNECT whose TLS the proxy terminates because the host has a secret binding in the
 * connection's context: the host and port every inner request must name, and the CONNECT's own
 * audited exchange (which ends when the client connection does).
 *
 * <p>Confined to the client channel's loop.
 */
final class Interception {
    final String host;
    final int port;
    final Session.Exchange connect;
    final String allowReason;
    /** Why the client connection ended, if something more specific than "complete" is known. */
    String closeReason;

    Interception(String host, int port, Session.Exchange connect, String allowReason) {
        this.host = host;
        this.port = port;
        this.connect = connect;
        this.allowReason = allowReason;
    }

    /** The Host header value a request inside this connection must carry (port omitted when 443). */
    String authority() {
        return port == 443 ? host : host + ":" + port;
    }

    /**
     * Sits where the {@code SslHandler} will go: waits for the ClientHello, checks that its SNI (if
     * any) is the CONNECT host, then replaces itself with a server {@code SslHandler} presenting a
     * leaf for that host. Bytes it buffered are handed to the {@code SslHandler} in order.
     */
    static final class Gate extends ByteToMessageDecoder {
        private final Session session;
        private final Interception in;
        private ScheduledFuture<?> timer;
        private boolean done;

        Gate(Session session, Interception in) {
            this.session = session;
            this.in = in;
        }

        @Override
        public void handlerAdded(ChannelHandlerContext ctx) {
            long ms = session.config().headerTimeout().toMillis();
            timer = ctx.executor().schedule(() -> {
                if (!done) deny(ctx, "no complete TLS ClientHello within " + ms + " ms after CONNECT");
            }, ms, TimeUnit.MILLISECONDS);
        }

        @Override
        protected void handlerRemoved0(ChannelHandlerContext ctx) {
            if (timer != null) timer.cancel(false);
        }

        @Override
        protected void decode(ChannelHandlerContext ctx, ByteBuf buf, List<Object> out) {
            if (done) return;
            ClientHelloParser.Result r = ClientHelloParser.parse(buf);
            if (r.needMore()) {
                if (buf.readableBytes() > ClientHelloParser.MAX_RECORD + 5) deny(ctx, "TLS ClientHello too large");
                return;
            }
            if (r.error() != null) {
                deny(ctx, r.error() + " (CONNECT host '" + in.host + "')");
                return;
            }
            String note = "no SNI";
            if (r.sni() != null) {
                String sni;
                try {
                    sni = HostNames.normalize(r.sni()).canonical();
                } catch (HostNames.InvalidHostException e) {
                    deny(ctx, "TLS SNI is invalid: " + e.getMessage());
                    return;
                }
                if (!sni.equals(in.host)) {
                    deny(ctx, "TLS SNI '" + HostNames.printable(sni) + "' does not match CONNECT host '" + in.host + "'");
                    return;
                }
                note = "TLS SNI matches";
            }
            done = true;
            timer.cancel(false);
            in.connect.decide(true, in.connect.address(), in.allowReason + "; " + note);
            SslHandler ssl = session.shared().ca().serverContext(in.host).newHandler(ctx.alloc());
            ssl.setHandshakeTimeoutMillis(session.config().headerTimeout().toMillis());
            // Removing this decoder hands the buffered ClientHello to the SslHandler.
            ctx.pipeline().replace(this, "tls", ssl);
        }

        private void deny(ChannelHandlerContext ctx, String reason) {
            if (done) return;
            done = true;
            in.connect.decide(false, in.connect.address(), reason);
            in.connect.finish("denied");
            Downstream.abort(ctx.channel(), reason);
        }
    }
}
