package dev.berth.mcp.preview;

import dev.berth.engine.Engine;
import dev.berth.engine.api.PortExposure;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http.HttpRequestDecoder;
import io.netty.handler.codec.http.HttpDecoderConfig;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * The inbound side of exposed ports (issue 13): an HTTP/1.1 listener that routes {@code /p/<id>/...} to port
 * {@code port} inside the exposure's workspace over the guest agent ({@link dev.berth.engine.Ports#connect}),
 * checking access first (tenant: bearer token, {@code ?berth_token=} once, or the cookie set from it; link: the URL
 * is the capability). Request heads are parsed and re-encoded (so smuggling shapes and oversized heads are refused
 * here and the app sees one unambiguous framing); responses are relayed as bytes, so chunked, streaming and SSE
 * responses pass as the app sends them; a WebSocket (any Upgrade) switches the connection to a byte relay in both
 * directions. Thread-safe.
 */
public final class PreviewServer implements AutoCloseable {
    /** Who a presented bearer token belongs to. */
    public interface Authenticator {
        /** The tenant id of {@code token}, or null when it is not a valid token of this server. */
        String tenantOf(String token);
    }

    /**
     * @param bind                  address to listen on
     * @param port                  0: any free port
     * @param publicBase            scheme://host[:port] the user's browser reaches this listener at; null: http://bind:port
     * @param maxConnectionsPerPort inbound connections one exposure may carry at once; more are refused with 503
     * @param hostHeader            the Host the app sees: null or {@code "localhost"}: {@code localhost:<port>} (what a
     *                              dev server expects); {@code "preserve"}: the Host the browser sent; anything else:
     *                              that value. Origin (and Referer) follow it when they name the preview's own origin
     * @param urlToken              appended as {@code ?berth_token=} to tenant-access URLs (stdio: the local token); null: none
     * @param domain                wildcard domain of per-port host names ({@code <id>.<domain>}, the app at {@code /});
     *                              null: previews only at {@code /p/<id>/}
     * @param backend               where every request that is not a preview goes (berth http's MCP endpoint, Tomcat on
     *                              loopback), relayed as bytes; null: such requests get 404
     */
    public record Settings(String bind, int port, String publicBase, int maxConnectionsPerPort, String hostHeader, String urlToken,
                           String domain, InetSocketAddress backend) {
        public static final int DEFAULT_MAX_CONNECTIONS = 128;
        public static final String PRESERVE = "preserve";
        public static final String LOCALHOST = "localhost";

        /** A listener of its own (stdio, or berth http with BERTH_PREVIEW_PORT): no domain, no backend. */
        public Settings(String bind, int port, String publicBase, int maxConnectionsPerPort, String hostHeader, String urlToken) {
            this(bind, port, publicBase, maxConnectionsPerPort, hostHeader, urlToken, null, null);
        }
    }

    private static final Map<Engine, PreviewServer> BY_ENGINE = new ConcurrentHashMap<>();

    final Engine engine;
    final Authenticator auth;
    final Settings settings;
    private final byte[] cookieKey = new byte[32];
    final Map<String, AtomicInteger> connections = new ConcurrentHashMap<>();
    private final EventLoopGroup boss = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
    private final EventLoopGroup workers = new MultiThreadIoEventLoopGroup(2, NioIoHandler.newFactory());
    private Channel server;
    private String base;

    public PreviewServer(Engine engine, Authenticator auth, Settings settings) {
        this.engine = engine;
        this.auth = auth;
        this.settings = settings;
        new SecureRandom().nextBytes(cookieKey);
    }

    /** The preview server serving {@code engine}'s exposures in this process, or null when none runs. */
    public static PreviewServer of(Engine engine) { return BY_ENGINE.get(engine); }

    public PreviewServer start() throws InterruptedException {
        ServerBootstrap b = new ServerBootstrap().group(boss, workers).channel(NioServerSocketChannel.class)
                .option(ChannelOption.SO_BACKLOG, 1024)
                .childOption(ChannelOption.TCP_NODELAY, true)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel ch) {
                        ch.pipeline().addLast("http", new HttpRequestDecoder(new HttpDecoderConfig()
                                .setMaxInitialLineLength(8192).setMaxHeaderSize(16384).setMaxChunkSize(65536)));
                        ch.pipeline().addLast("preview", new PreviewHandler(PreviewServer.this));
                    }
                });
        try {
            server = b.bind(new InetSocketAddress(settings.bind(), settings.port())).sync().channel();
        } catch (InterruptedException e) {
            throw e;
        } catch (Exception e) { // Netty rethrows the bind failure (a checked BindException) unchecked
            boss.shutdownGracefully(0, 1, java.util.concurrent.TimeUnit.SECONDS);
            workers.shutdownGracefully(0, 1, java.util.concurrent.TimeUnit.SECONDS);
            throw new IllegalStateException(settings.bind() + ":" + settings.port() + ": " + e.getMessage(), e);
        }
        int port = ((InetSocketAddress) server.localAddress()).getPort();
        String host = settings.bind().contains(":") ? "[" + settings.bind() + "]" : settings.bind();
        base = settings.publicBase() != null ? settings.publicBase().replaceAll("/+$", "").replace("{port}", Integer.toString(port))
                : "http://" + host + ":" + port;
        BY_ENGINE.put(engine, this);
        return this;
    }

    public int port() { return ((InetSocketAddress) server.localAddress()).getPort(); }

    /** scheme://host:port the previews are served at. */
    public String base() { return base; }

    /** The URL a user opens for {@code e}: {@code <scheme>://<id>.<domain>[:port]/} with a domain, else {@code <base>/p/<id>/}. */
    public String url(PortExposure e) {
        String u = settings.domain() != null ? hostOrigin(e.id()) + "/" : base + "/p/" + e.id() + "/";
        if (e.access().equals(PortExposure.TENANT) && settings.urlToken() != null) u += "?berth_token=" + settings.urlToken();
        return u;
    }

    /** {@code <scheme>://<id>.<domain>[:port]}: the public origin of {@code id}'s per-port host name. */
    String hostOrigin(String id) {
        java.net.URI u = java.net.URI.create(base);
        return u.getScheme() + "://" + id + "." + settings.domain() + (u.getPort() < 0 ? "" : ":" + u.getPort());
    }

    /** Whether the browser reaches this server over https (cookies get Secure). */
    boolean secure() { return base.startsWith("https:"); }

    /**
     * The preview id a request's Host names under the wildcard domain ({@code <label>.<domain>[:port]}, any case), the
     * label unchecked; null when there is no domain or the Host is not under it (the request goes to the backend).
     */
    String idOfHost(String host) {
        if (settings.domain() == null || host == null) return null;
        String h = host.toLowerCase(java.util.Locale.ROOT);
        int colon = h.lastIndexOf(':');
        if (colon > 0 && !h.endsWith("]") && h.indexOf(':') == colon) h = h.substring(0, colon);
        if (h.endsWith(".")) h = h.substring(0, h.length() - 1);
        String suffix = "." + settings.domain();
        return h.endsWith(suffix) && h.length() > suffix.length() ? h.substring(0, h.length() - suffix.length()) : null;
    }

    /** The cookie value that stands for {@code tenant}'s token on exposure {@code id}: HMAC, useless elsewhere. */
    String cookieFor(String id, String tenant) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(cookieKey, "HmacSHA256"));
            byte[] h = mac.doFinal((id + "\n" + tenant).getBytes(StandardCharsets.UTF_8));
            return Base64.getUrlEncoder().withoutPadding().encodeToString(h);
        } catch (java.security.GeneralSecurityException x) {
            throw new IllegalStateException("every JDK has HmacSHA256", x);
        }
    }

    @Override
    public void close() {
        BY_ENGINE.remove(engine, this);
        if (server != null) server.close().syncUninterruptibly();
        boss.shutdownGracefully(0, 1, java.util.concurrent.TimeUnit.SECONDS);
        workers.shutdownGracefully(0, 1, java.util.concurrent.TimeUnit.SECONDS);
    }
}
