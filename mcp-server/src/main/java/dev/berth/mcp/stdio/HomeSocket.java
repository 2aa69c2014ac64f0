package dev.berth.mcp.stdio;

import io.modelcontextprotocol.json.McpJsonMapper;
import io.modelcontextprotocol.server.McpSyncServer;
import io.modelcontextprotocol.spec.McpServerTransportProvider;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.Channels;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

/**
 * The owner's side of "one home, many clients": a unix socket {@code home/berth.sock} (mode 0600, so only the
 * owner's user can connect) on which each connection is one more MCP stdio session over the owner's engine. A later
 * {@code berth stdio} on the same home pipes its client to it ({@link HomeAttach}), so several agent sessions share
 * one set of workspaces and only the owner ever recovers or touches sandboxes. Sessions over the socket are the
 * local user's ({@code Tenant.LOCAL}), like stdio. Thread-safe.
 */
public final class HomeSocket implements AutoCloseable {
    static final String FILE = "berth.sock";
    private static final System.Logger LOG = System.getLogger("berth.home");

    private final ServerSocketChannel server;
    private final Path path;
    private final AtomicInteger sessions = new AtomicInteger();

    private HomeSocket(ServerSocketChannel server, Path path) {
        this.server = server;
        this.path = path;
    }

    /**
     * Listens on {@code home/berth.sock} and serves every connection as an MCP session; null when it cannot (logged).
     *
     * @param newSession builds the MCP server of one attached session over its transport (the owner's engine, tenant
     *                   {@code local}, transport "home-socket" in audit records)
     */
    public static HomeSocket listen(Path home, McpJsonMapper json, Function<McpServerTransportProvider, McpSyncServer> newSession) {
        Path p = home.toAbsolutePath().resolve(FILE);
        if (p.toString().length() > 107) {
            LOG.log(System.Logger.Level.WARNING, "no home socket: " + p + " is too long for a unix socket; a second client on"
                    + " this home will be refused");
            return null;
        }
        try {
            Files.deleteIfExists(p); // left by a dead owner: we hold the home lock, so it is ours to replace
            ServerSocketChannel ch = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
            ch.bind(UnixDomainSocketAddress.of(p));
            Files.setPosixFilePermissions(p, PosixFilePermissions.fromString("rw-------"));
            HomeSocket s = new HomeSocket(ch, p);
            Thread.ofPlatform().daemon().name("berth-home-socket").start(() -> s.accept(json, newSession));
            return s;
        } catch (IOException e) {
            LOG.log(System.Logger.Level.WARNING, "no home socket at " + p + ": " + e.getMessage());
            return null;
        }
    }

    /** MCP sessions attached through the socket right now. */
    int sessions() { return sessions.get(); }

    /** Waits until no session is attached through the socket. */
    public synchronized void awaitNoSessions() throws InterruptedException {
        while (sessions.get() > 0) wait();
    }

    private synchronized void sessionEnded() {
        sessions.decrementAndGet();
        notifyAll();
    }

    private void accept(McpJsonMapper json, Function<McpServerTransportProvider, McpSyncServer> newSession) {
        while (server.isOpen()) {
            SocketChannel c;
            try {
                c = server.accept();
            } catch (IOException e) {
                return; // closed
            }
            Thread.ofVirtual().name("berth-home-session").start(() -> serve(c, json, newSession));
        }
    }

    private void serve(SocketChannel c, McpJsonMapper json, Function<McpServerTransportProvider, McpSyncServer> newSession) {
        sessions.incrementAndGet();
        CountDownLatch eof = new CountDownLatch(1);
        McpSyncServer mcp = null;
        try (c) {
            // the same hardened line transport as stdio: a malformed line from an attached client is answered, not fatal
            mcp = newSession.apply(new StdioTransport(json, Channels.newInputStream(c), Channels.newOutputStream(c), eof::countDown));
            eof.await();
        } catch (IOException | InterruptedException | RuntimeException e) {
            LOG.log(System.Logger.Level.DEBUG, "home session ended: " + e.getMessage());
        } finally {
            if (mcp != null) {
                try {
                    mcp.closeGracefully();
                } catch (RuntimeException ignored) {
                    // the connection is gone already
                }
            }
            sessionEnded();
        }
    }

    @Override
    public void close() {
        try {
            server.close();
            Files.deleteIfExists(path);
        } catch (IOException ignored) {
            // best effort: the next owner replaces a stale socket file
        }
    }
}
