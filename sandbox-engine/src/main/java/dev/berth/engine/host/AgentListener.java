package dev.berth.engine.host;

import dev.berth.engine.spi.SandboxException;
import java.io.IOException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

/**
 * The host end of a sandbox's agent socket while the sandbox starts (namespace and gVisor levels): waits for the
 * guest agent to connect, and says why when the launcher died first or the agent never came, with the tail of the
 * launcher's log. Stateless.
 */
public final class AgentListener {
    private AgentListener() {}

    /**
     * The agent's connection (blocking mode), accepted on {@code server} within {@code timeout}; fails as soon as
     * {@code launcher} ({@code name}: "bubblewrap", "runsc") exits.
     */
    public static SocketChannel accept(ServerSocketChannel server, Process launcher, String name, Path log, Duration timeout)
            throws IOException, SandboxException {
        server.configureBlocking(false);
        try (Selector sel = Selector.open()) {
            server.register(sel, SelectionKey.OP_ACCEPT);
            long deadline = System.nanoTime() + timeout.toNanos();
            while (System.nanoTime() < deadline) {
                sel.select(50);
                SocketChannel ch = server.accept();
                if (ch != null) {
                    ch.configureBlocking(true);
                    return ch;
                }
                if (!launcher.isAlive()) {
                    throw new SandboxException(name + " exited with status " + launcher.exitValue() + " before the agent connected: "
                            + tail(log));
                }
            }
        }
        throw new SandboxException("the agent did not connect within " + timeout.toSeconds() + " s: " + tail(log));
    }

    /** The last 2,000 characters of a launcher's log, or "(no output)". */
    public static String tail(Path log) {
        try {
            String s = Files.readString(log).strip();
            return s.isEmpty() ? "(no output)" : s.length() > 2000 ? s.substring(s.length() - 2000) : s;
        } catch (IOException e) {
            return "(no output)";
        }
    }
}
