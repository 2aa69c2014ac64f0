package dev.berth.mcp.http;

import dev.berth.mcp.tools.Cancellations;
import jakarta.servlet.Filter;
import jakarta.servlet.http.HttpServlet;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.apache.catalina.Context;
import org.apache.catalina.LifecycleException;
import org.apache.catalina.Wrapper;
import org.apache.catalina.connector.Connector;
import org.apache.catalina.startup.Tomcat;
import org.apache.catalina.core.StandardHost;
import org.apache.tomcat.util.descriptor.web.FilterDef;
import org.apache.tomcat.util.descriptor.web.FilterMap;

/**
 * One embedded Tomcat serving both MCP HTTP transports: Streamable HTTP at {@value #MCP} and the legacy HTTP+SSE
 * transport at {@value #SSE} + {@value #MESSAGE}, plus the protected resource metadata. Every request passes, in
 * order: Host/Origin validation (all paths), bearer authentication (MCP paths), session ownership (a session is
 * usable only by the tenant that opened it), the JSON-RPC guard (POSTs: size, depth, shape; SDK error bodies
 * reworded), the cancellation tap (MCP POSTs). {@value #METRICS} checks the operator's scrape token itself. Error
 * pages are a JSON status and reason ({@link JsonErrorValve}): no stack trace, no server version.
 */
public final class HttpServer implements AutoCloseable {
    public static final String MCP = "/mcp";
    public static final String SSE = "/sse";
    public static final String MESSAGE = "/message";
    public static final String RESOURCE_METADATA = "/.well-known/oauth-protected-resource";
    /** Prometheus exposition, for the operator's scrape token only; served when the config has a metrics section. */
    public static final String METRICS = "/metrics";
    /** Largest JSON-RPC message accepted, the same as on stdio; the tool schemas' inputs fit in it. */
    public static final int MAX_BODY = dev.berth.mcp.jsonrpc.WireLimits.MAX_MESSAGE_BYTES;

    /** Benchmark-only: serve without {@link JsonRpcGuard}, to measure what it costs ({@code TransportBench}). */
    static final String UNHARDENED_PROPERTY = "berth.bench.unhardenedTransport";

    /**
     * What the listener needs of the operator's config.
     *
     * @param publicUrl          how clients reach this server; the OAuth resource identifier
     * @param allowedOrigins     Origin values accepted (DNS-rebinding protection)
     * @param allowedHosts       Host header values accepted
     * @param jwtIssuer          the JWT issuer named in the resource metadata, or null
     * @param metricsTokenSha256 the operator's scrape token (hex SHA-256); null: no {@value #METRICS}
     */
    public record Settings(String bind, int port, String publicUrl, List<String> allowedOrigins, List<String> allowedHosts,
                           String jwtIssuer, String metricsTokenSha256) {}

    private final Tomcat tomcat = new Tomcat();
    private final Path baseDir;

    /**
     * @param streamable the SDK's Streamable HTTP servlet
     * @param sse        the SDK's legacy SSE servlet (serves both {@value #SSE} and {@value #MESSAGE})
     * @param meters     what {@value #METRICS} exposes when the config has a metrics section
     */
    public HttpServer(Settings config, BearerAuthenticator auth, Cancellations cancellations,
                      HttpServlet streamable, HttpServlet sse,
                      io.micrometer.prometheusmetrics.PrometheusMeterRegistry meters) throws IOException {
        this(config, auth, cancellations, streamable, sse, meters, false);
    }

    /**
     * @param behindFront true: listen on 127.0.0.1, any free port, behind the preview listener that owns the public
     *                    port and relays every request that is not a preview here (with X-Forwarded-For, which is
     *                    then trusted from loopback only, for the client address in logs)
     */
    public HttpServer(Settings config, BearerAuthenticator auth, Cancellations cancellations,
                      HttpServlet streamable, HttpServlet sse,
                      io.micrometer.prometheusmetrics.PrometheusMeterRegistry meters, boolean behindFront) throws IOException {
        baseDir = Files.createTempDirectory("berth-http-");
        tomcat.setBaseDir(baseDir.toString());
        Connector connector = new Connector();
        connector.setPort(behindFront ? 0 : config.port());
        connector.setProperty("address", behindFront ? "127.0.0.1" : config.bind());
        connector.setXpoweredBy(false);
        connector.setThrowOnFailure(true); // a port in use must fail start(), not leave a server that never listens
        tomcat.setConnector(connector);

        // Tomcat's own error pages (HTML, with stack traces for exceptions) give way to a JSON status and reason
        ((StandardHost) tomcat.getHost()).setErrorReportValveClass(JsonErrorValve.class.getName());

        if (behindFront) {
            org.apache.catalina.valves.RemoteIpValve ip = new org.apache.catalina.valves.RemoteIpValve();
            ip.setInternalProxies("127\\.0\\.0\\.1");
            ip.setProtocolHeader(null);
            tomcat.getEngine().getPipeline().addValve(ip);
        }
        Context ctx = tomcat.addContext("", null);
        servlet(ctx, "mcp", streamable, MCP);
        servlet(ctx, "sse", sse, SSE, MESSAGE);
        String resource = config.publicUrl();
        String issuer = config.jwtIssuer();
        if (config.metricsTokenSha256() != null) servlet(ctx, "metrics", new MetricsServlet(meters, config.metricsTokenSha256()), METRICS);
        servlet(ctx, "resource-metadata", new ResourceMetadataServlet(resource, issuer), RESOURCE_METADATA, RESOURCE_METADATA + MCP);

        filter(ctx, "host-origin", new HostOriginFilter(config.allowedOrigins(), config.allowedHosts()), "/*");
        filter(ctx, "bearer-auth", new BearerAuthFilter(auth, resource + RESOURCE_METADATA), MCP, SSE, MESSAGE);
        filter(ctx, "session-owners", new SessionOwners(), MCP, SSE, MESSAGE);
        if (Boolean.getBoolean(UNHARDENED_PROPERTY)) {
            System.err.println("berth: -D" + UNHARDENED_PROPERTY + " is set: no JSON-RPC guard in front of the SDK (benchmarks only)");
        } else {
            filter(ctx, "json-rpc-guard", new JsonRpcGuard(), MCP, MESSAGE);
        }
        filter(ctx, "cancellation-tap", new CancellationTap(cancellations), MCP, MESSAGE);
    }

    private static void servlet(Context ctx, String name, HttpServlet servlet, String... paths) {
        Wrapper w = Tomcat.addServlet(ctx, name, servlet);
        w.setAsyncSupported(true); // the SDK streams SSE responses from other threads
        for (String p : paths) ctx.addServletMappingDecoded(p, name);
    }

    private static void filter(Context ctx, String name, Filter filter, String... paths) {
        FilterDef def = new FilterDef();
        def.setFilterName(name);
        def.setFilter(filter);
        def.setAsyncSupported("true");
        ctx.addFilterDef(def);
        FilterMap map = new FilterMap();
        map.setFilterName(name);
        for (String p : paths) map.addURLPatternDecoded(p);
        ctx.addFilterMap(map);
    }

    public void start() throws LifecycleException {
        tomcat.start();
    }

    /** The port actually bound, or -1 when binding failed. */
    public int port() {
        return tomcat.getConnector().getLocalPort();
    }

    @Override
    public void close() {
        try {
            tomcat.stop();
            tomcat.destroy();
        } catch (LifecycleException e) {
            System.getLogger("berth.http").log(System.Logger.Level.WARNING, "stopping Tomcat: " + e.getMessage());
        }
        try {
            dev.berth.engine.spi.Trees.delete(baseDir);
        } catch (IOException e) {
            System.getLogger("berth.http").log(System.Logger.Level.WARNING, "removing " + baseDir + ": " + e.getMessage());
        }
    }
}
