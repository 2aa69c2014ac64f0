package dev.berth.mcp;

import dev.berth.engine.Engine;
import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.HomeOwnedException;
import dev.berth.mcp.cli.Options;
import dev.berth.mcp.stdio.HomeAttach;
import dev.berth.mcp.stdio.HomeSocket;
import dev.berth.mcp.stdio.StdioTransport;
import io.modelcontextprotocol.server.McpSyncServer;
import io.modelcontextprotocol.server.transport.StdioServerTransportProvider;
import io.modelcontextprotocol.spec.McpServerTransportProvider;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.util.List;
import java.util.concurrent.CountDownLatch;

/**
 * {@code berth stdio}'s wiring: MCP over stdin/stdout through {@link StdioTransport}. stdout carries only protocol messages
 * (everything else printed by anyone goes to stderr); end of stdin means the client is gone, whatever was read
 * before it, so the server shuts down cleanly: ephemeral workspaces are deleted and persistent ones parked. SIGTERM and
 * SIGINT do the same, and a second one while stopping takes the fast path ({@link StopSignals}).
 */
final class ServeStdio {
    /** Benchmark-only switch back to the SDK's unhardened stdio transport (see {@link #sdkTransport}). */
    static final String UNHARDENED_PROPERTY = "berth.bench.unhardenedTransport";

    private ServeStdio() {}

    static int run(Options opts) throws IOException {
        PrintStream protocolOut = System.out;
        System.setOut(System.err);
        Engine engine;
        List<java.nio.file.Path> projectRoots;
        try {
            // stdio has one local tenant and no HTTP; of an operator config it uses the egress, guard and project_roots sections
            OperatorConfig operator = opts.config() == null ? null : OperatorConfig.loadForStdio(opts.config());
            projectRoots = operator == null ? List.of() : operator.projectRootPaths();
            engine = Drivers.engine(opts, operator);
        } catch (OperatorConfig.ConfigException e) {
            System.err.println("berth: " + e.getMessage());
            return 2;
        } catch (HomeOwnedException owned) {
            // another live Berth owns this home: serve our client through it, touching nothing here
            return HomeAttach.pipe(owned, System.in, protocolOut);
        } catch (EngineException e) {
            System.err.println("berth: " + e.getMessage());
            return 1;
        }
        HomeSocket home = HomeSocket.listen(engine.home(), BerthServer.JSON, t -> BerthServer.build(t, engine, "home-socket", projectRoots));
        startPreviews(engine);
        CountDownLatch eof = new CountDownLatch(1);
        McpServerTransportProvider transport = Boolean.getBoolean(UNHARDENED_PROPERTY)
                ? sdkTransport(protocolOut, eof) : new StdioTransport(BerthServer.JSON, System.in, protocolOut, eof::countDown);
        McpSyncServer server = BerthServer.build(transport, engine, "stdio", projectRoots);
        StopSignals signals = StopSignals.install(engine);
        Thread hook = new Thread(() -> {
            shutdown(server, engine);
            signals.awaitFastPath();
        }, "berth-shutdown");
        Runtime.getRuntime().addShutdownHook(hook);
        try {
            eof.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        // our own client is gone; sessions attached through the home socket keep the owner until they end too
        if (home != null) {
            try {
                home.awaitNoSessions();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            home.close();
        }
        shutdown(server, engine);
        return 0;
    }

    /**
     * The MCP SDK's own stdio transport, which goes deaf after one malformed line. Kept only so that
     * {@code TransportBench} can measure the hardened path next to it; never use it to serve a client.
     */
    private static McpServerTransportProvider sdkTransport(PrintStream protocolOut, CountDownLatch eof) {
        System.err.println("berth: -D" + UNHARDENED_PROPERTY + " is set: serving with the SDK's stdio transport (benchmarks only)");
        InputStream in = new FilterInputStream(System.in) {
            @Override
            public int read() throws IOException {
                int b = super.read();
                if (b < 0) eof.countDown();
                return b;
            }

            @Override
            public int read(byte[] buf, int off, int len) throws IOException {
                int n = super.read(buf, off, len);
                if (n < 0) eof.countDown();
                return n;
            }
        };
        return new StdioServerTransportProvider(BerthServer.JSON, in, protocolOut);
    }

    /**
     * Exposed ports over stdio: a listener on 127.0.0.1 (a random port, or BERTH_PREVIEW_PORT) on the user's machine.
     * The local tenant's token is a random one of this process, carried in the URLs expose_port returns (the first
     * request swaps it for a cookie). Without the listener expose_port says so.
     */
    static void startPreviews(Engine engine) {
        try {
            String port = System.getProperty("berth.preview.port", System.getenv("BERTH_PREVIEW_PORT"));
            byte[] t = new byte[24];
            new java.security.SecureRandom().nextBytes(t);
            String token = java.util.Base64.getUrlEncoder().withoutPadding().encodeToString(t);
            new dev.berth.mcp.preview.PreviewServer(engine, presented -> java.security.MessageDigest.isEqual(
                    presented.getBytes(java.nio.charset.StandardCharsets.UTF_8), token.getBytes(java.nio.charset.StandardCharsets.UTF_8))
                    ? dev.berth.engine.api.Tenant.LOCAL.id() : null,
                    new dev.berth.mcp.preview.PreviewServer.Settings("127.0.0.1", port == null ? 0 : Integer.parseInt(port), null,
                            dev.berth.mcp.preview.PreviewServer.Settings.DEFAULT_MAX_CONNECTIONS, null, token)).start();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException e) {
            System.err.println("berth: no preview listener (expose_port will refuse): " + e.getMessage());
        }
    }

    /**
     * The clean stop (end of stdin, or the hook of a first SIGTERM/SIGINT): previews closed, then the engine's
     * bounded stop, whose report is printed on stderr. A second caller waits for the first and prints nothing.
     */
    private static void shutdown(McpSyncServer server, Engine engine) {
        // workspaces first: the client kills a server that has not exited a few seconds after closing stdin
        var previews = dev.berth.mcp.preview.PreviewServer.of(engine);
        if (previews != null) previews.close();
        var report = engine.stop();
        if (report != null) System.err.println("berth: stopping: " + report.line());
        try {
            server.closeGracefully();
        } catch (RuntimeException ignored) {
            // the transport is gone already
        }
    }
}
