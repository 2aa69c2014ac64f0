package dev.berth.mcp;

import dev.berth.engine.Engine;
import dev.berth.engine.EngineException;
import dev.berth.engine.HomeOwnedException;
import io.modelcontextprotocol.server.McpSyncServer;
import io.modelcontextprotocol.server.transport.StdioServerTransportProvider;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.util.concurrent.CountDownLatch;

/**
 * {@code berth stdio}: MCP over stdin/stdout. stdout carries only protocol messages (everything else printed by
 * anyone goes to stderr); end of stdin means the client is gone, so the server shuts down cleanly: ephemeral
 * workspaces are deleted and persistent ones parked.
 */
final class StdioCommand {
    private StdioCommand() {}

    static int run(Options opts) throws IOException {
        PrintStream protocolOut = System.out;
        System.setOut(System.err);
        Engine engine;
        try {
            // stdio has one local tenant and no HTTP; of an operator config it uses the egress and guard sections
            OperatorConfig operator = opts.config() == null ? null : OperatorConfig.loadForStdio(opts.config());
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
        HomeSocket home = HomeSocket.listen(engine.home(), engine);
        CountDownLatch eof = new CountDownLatch(1);
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
        var transport = new StdioServerTransportProvider(BerthServer.JSON, in, protocolOut);
        McpSyncServer server = BerthServer.build(transport, engine);
        Thread hook = new Thread(() -> shutdown(server, engine), "berth-shutdown");
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

    private static void shutdown(McpSyncServer server, Engine engine) {
        // workspaces first: the client kills a server that has not exited a few seconds after closing stdin
        engine.close();
        try {
            server.closeGracefully();
        } catch (RuntimeException ignored) {
            // the transport is gone already
        }
    }
}
