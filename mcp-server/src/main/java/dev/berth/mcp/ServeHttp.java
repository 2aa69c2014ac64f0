package dev.berth.mcp;

import dev.berth.engine.Engine;
import dev.berth.engine.api.EngineException;
import dev.berth.mcp.cli.Options;
import dev.berth.mcp.http.BearerAuthenticator;
import dev.berth.mcp.http.CallContext;
import dev.berth.mcp.http.HttpServer;
import dev.berth.mcp.http.JsonLogFormatter;
import dev.berth.mcp.stdio.HomeSocket;
import dev.berth.mcp.tools.Cancellations;
import io.modelcontextprotocol.server.McpServer;
import io.modelcontextprotocol.server.McpSyncServer;
import io.modelcontextprotocol.server.transport.HttpServletSseServerTransportProvider;
import io.modelcontextprotocol.server.transport.HttpServletStreamableServerTransportProvider;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;

/**
 * {@code berth http}'s wiring: MCP over Streamable HTTP and the legacy HTTP+SSE transport for many tenants, each
 * authenticated by a bearer token and confined to its own workspaces. Runs until SIGTERM/SIGINT, then closes the
 * transports and the engine (ephemeral workspaces deleted, persistent ones parked). Its own log lines on stderr are
 * JSON ({@code BERTH_LOG_FORMAT=text} for plain); {@code /metrics} serves the engine's and the JVM's meters.
 */
final class ServeHttp {
    private ServeHttp() {}

    static int run(Options opts) throws Exception {
        return run(opts, false);
    }

    /** {@code berth node} ({@code asNode}): {@code berth http} that must join a fleet, so its config needs a fleet section. */
    static int run(Options opts, boolean asNode) throws Exception {
        String cmd = asNode ? "node" : "http";
        if (opts.config() == null) {
            System.err.println("berth: " + cmd + " needs --config FILE (tokens, tenants and quotas; see README.md)");
            return 2;
        }
        OperatorConfig config;
        BearerAuthenticator auth;
        try {
            config = OperatorConfig.load(opts.config(), opts.bind(), opts.port());
            auth = authenticator(config);
        } catch (OperatorConfig.ConfigException | BearerAuthenticator.KeysException e) {
            System.err.println("berth: " + e.getMessage());
            return 2;
        }
        if (asNode && config.fleet() == null) {
            System.err.println("berth: node needs a fleet section in " + opts.config() + " (etcd endpoints, node_id; docs/operator-config.md)");
            return 2;
        }
        if (config.fleet() != null) {
            try {
                dev.berth.mcp.fleet.FleetNode.precheck(config.fleet());
            } catch (RuntimeException e) {
                System.err.println("berth: cannot join the fleet as node '" + config.fleet().nodeId() + "': " + e.getMessage());
                return 1;
            }
        }
        if (!"text".equals(System.getenv("BERTH_LOG_FORMAT"))) JsonLogFormatter.install();
        var meters = new io.micrometer.prometheusmetrics.PrometheusMeterRegistry(io.micrometer.prometheusmetrics.PrometheusConfig.DEFAULT);
        new io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics().bindTo(meters);
        new io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics().bindTo(meters);
        new io.micrometer.core.instrument.binder.system.ProcessorMetrics().bindTo(meters);
        new io.micrometer.core.instrument.binder.system.UptimeMetrics().bindTo(meters);
        Engine engine;
        try {
            engine = Drivers.engine(opts, config, meters);
        } catch (EngineException e) {
            System.err.println("berth: " + e.getMessage());
            return 1;
        }
        Cancellations cancellations = new Cancellations();
        var streamable = HttpServletStreamableServerTransportProvider.builder()
                .jsonMapper(BerthServer.JSON).mcpEndpoint(HttpServer.MCP)
                .contextExtractor(CallContext.EXTRACTOR)
                .maxRequestSize(HttpServer.MAX_BODY)
                .keepAliveInterval(Duration.ofSeconds(30)).build();
        var sse = HttpServletSseServerTransportProvider.builder()
                .jsonMapper(BerthServer.JSON).sseEndpoint(HttpServer.SSE).messageEndpoint(HttpServer.MESSAGE)
                .contextExtractor(CallContext.EXTRACTOR)
                .maxRequestSize(HttpServer.MAX_BODY)
                .keepAliveInterval(Duration.ofSeconds(30)).build();
        McpSyncServer streamableServer = BerthServer.build(McpServer.sync(streamable), engine, CallContext::tenant, cancellations, "streamable-http");
        McpSyncServer sseServer = BerthServer.build(McpServer.sync(sse), engine, CallContext::tenant, cancellations, "sse");
        // previews on the MCP server's own port (a front that relays everything else to Tomcat on loopback), unless
        // BERTH_PREVIEW_PORT asks for a listener of their own
        String separatePort = System.getProperty("berth.preview.port", System.getenv("BERTH_PREVIEW_PORT"));
        boolean front = separatePort == null;
        HttpServer http = new HttpServer(settings(config), auth, cancellations, streamable, sse, meters, front);
        // a `berth stdio` of the operator on this home is served through this process (home/berth.sock, mode 0600)
        HomeSocket home = HomeSocket.listen(engine.home(), BerthServer.JSON, t -> BerthServer.build(t, engine, "home-socket"));
        dev.berth.mcp.preview.PreviewServer[] previewsRef = new dev.berth.mcp.preview.PreviewServer[1];
        dev.berth.mcp.fleet.FleetNode[] fleetRef = new dev.berth.mcp.fleet.FleetNode[1];
        CountDownLatch stopped = new CountDownLatch(1);
        StopSignals signals = StopSignals.install(engine);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            if (fleetRef[0] != null) fleetRef[0].leave(); // leave first: no call is routed here while the rest stops
            if (home != null) home.close();
            streamableServer.closeGracefully();
            sseServer.closeGracefully();
            if (previewsRef[0] != null) previewsRef[0].close();
            http.close();
            var report = engine.stop();
            if (report != null) System.err.println("berth: stopping: " + report.line());
            if (fleetRef[0] != null) fleetRef[0].close(); // after the engine: deleted ephemeral workspaces were released
            System.err.println("berth http stopped: transports closed, ephemeral workspaces deleted, persistent ones parked");
            signals.awaitFastPath();
            stopped.countDown();
        }, "berth-shutdown"));
        // joined before listening, so the engine admits no workspace past the fleet's names and quotas; left first at stop
        if (config.fleet() != null) {
            try {
                fleetRef[0] = dev.berth.mcp.fleet.FleetNode.join(config.fleet(), engine,
                        () -> config.tenants().keySet().stream().mapToInt(t -> engine.list(config.tenant(t)).size()).sum(),
                        (t, id) -> config.tenants().containsKey(t) && engine.list(config.tenant(t)).stream().anyMatch(w -> w.id().equals(id)));
            } catch (RuntimeException e) {
                System.err.println("berth: cannot join the fleet as node '" + config.fleet().nodeId() + "': " + e.getMessage());
                return 1;
            }
            System.err.println("berth " + cmd + ": joined the fleet as node '" + config.fleet().nodeId() + "' (advertised at "
                    + config.fleet().advertise() + ")");
        }
        try {
            http.start();
        } catch (org.apache.catalina.LifecycleException e) {
            Throwable root = e;
            while (root.getCause() != null) root = root.getCause();
            System.err.println("berth: cannot listen on " + config.http().bind() + ":" + config.http().port() + ": " + root.getMessage());
            return 1;
        }
        if (http.port() < 0) {
            System.err.println("berth: cannot listen on " + config.http().bind() + ":" + config.http().port() + " (see the log above)");
            return 1;
        }
        int port = http.port();
        if (front) {
            try {
                previewsRef[0] = startPreviews(config, auth, engine, config.http().bind(), config.http().port(),
                        new java.net.InetSocketAddress("127.0.0.1", http.port()));
            } catch (RuntimeException e) {
                // a port in use is a bind failure; Netty throws it unchecked (the preview server wraps it with the
                // address, which this line names already)
                String why = e.getCause() != null && e.getCause().getMessage() != null ? e.getCause().getMessage() : e.getMessage();
                System.err.println("berth: cannot listen on " + config.http().bind() + ":" + config.http().port() + ": " + why);
                return 1;
            }
            port = previewsRef[0].port();
        } else {
            try {
                previewsRef[0] = startPreviews(config, auth, engine, config.http().bind(), Integer.parseInt(separatePort), null);
            } catch (RuntimeException e) {
                System.err.println("berth: no preview listener (expose_port will refuse): " + e.getMessage());
            }
        }
        if (!loopback(config.http().bind()) && config.http().publicUrl().startsWith("http:")) {
            System.err.println("berth: warning: listening on " + config.http().bind() + " over plain HTTP: bearer tokens cross the"
                    + " network in clear. Put TLS in front and set http.public_url to its https:// URL (and http.allowed_hosts"
                    + " to the names clients use)");
        }
        System.err.println("berth http listening on " + config.http().bind() + ":" + port + " (Streamable HTTP "
                + HttpServer.MCP + ", legacy SSE " + HttpServer.SSE + "; public URL " + config.http().publicUrl() + ")");
        stopped.await();
        return 0;
    }

    /**
     * Exposed ports over HTTP, with the same bearer tokens as MCP (static or JWT); requests for workspaces of tenants
     * of this config may wake them. With {@code backend} (the default) this listener owns the public port: previews
     * at {@code <public_url>/p/<id>/} (or {@code <id>.<http.previews.domain>}) and every other request relayed to the
     * MCP endpoint at {@code backend}. Without it (BERTH_PREVIEW_PORT) a listener of its own on that port, URLs under
     * the host of http.public_url with that port.
     */
    static dev.berth.mcp.preview.PreviewServer startPreviews(OperatorConfig config, BearerAuthenticator auth, Engine engine,
                                                              String bind, int port, java.net.InetSocketAddress backend) {
        java.net.URI pub = java.net.URI.create(config.http().publicUrl());
        String base = backend != null ? config.http().publicUrl()
                : pub.getScheme() + "://" + (pub.getHost().contains(":") ? "[" + pub.getHost() + "]" : pub.getHost()) + ":{port}";
        OperatorConfig.Previews pc = config.http().previews();
        engine.ports().setTenantResolver(id -> config.tenants().containsKey(id) ? config.tenant(id) : null);
        try {
            var p = new dev.berth.mcp.preview.PreviewServer(engine, token -> auth.authenticate("Bearer " + token)
                    instanceof dev.berth.mcp.http.AuthResult.Granted g ? g.tenant().id() : null,
                    new dev.berth.mcp.preview.PreviewServer.Settings(bind, port, base,
                            dev.berth.mcp.preview.PreviewServer.Settings.DEFAULT_MAX_CONNECTIONS, pc == null ? null : pc.hostHeader(), null,
                            pc == null ? null : pc.domain(), backend)).start();
            System.err.println("berth http: previews of exposed ports at " + p.base() + "/p/<id>/"
                    + (pc != null && pc.domain() != null ? " and <id>." + pc.domain() : ""));
            return p;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while starting the preview listener", e);
        }
    }

    /** The authenticator of the config's tokens, JWT issuer and tenants. */
    static BearerAuthenticator authenticator(OperatorConfig config) throws BearerAuthenticator.KeysException {
        var tokens = config.auth().tokens().stream().map(t -> new BearerAuthenticator.TokenHash(t.tenant(), t.sha256())).toList();
        OperatorConfig.Jwt j = config.auth().jwt();
        var jwt = j == null ? null : new BearerAuthenticator.Jwt(j.issuer(), j.audience(), j.jwksFile(), j.tenantClaim());
        return new BearerAuthenticator(tokens, jwt, id -> config.tenants().containsKey(id) ? config.tenant(id) : null);
    }

    /** What the HTTP listener needs of the config. */
    static HttpServer.Settings settings(OperatorConfig config) {
        OperatorConfig.Http h = config.http();
        return new HttpServer.Settings(h.bind(), h.port(), h.publicUrl(), h.allowedOrigins(), h.allowedHosts(),
                config.auth().jwt() == null ? null : config.auth().jwt().issuer(),
                config.metrics() == null ? null : config.metrics().tokenSha256());
    }

    private static boolean loopback(String bind) {
        try {
            return java.net.InetAddress.getByName(bind).isLoopbackAddress();
        } catch (java.net.UnknownHostException e) {
            return false;
        }
    }
}
