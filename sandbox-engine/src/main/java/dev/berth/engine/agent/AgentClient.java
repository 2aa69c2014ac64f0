package dev.berth.engine.agent;

import java.io.IOException;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.time.Instant;
import java.util.List;

/**
 * Host side of the Berth agent protocol (tool-schemas/agent-protocol.md) over one connected byte stream.
 *
 * <p>Thread-safe: any number of threads may exec, read and write files concurrently; frames of different channels
 * interleave on the stream. One reader thread per client dispatches incoming frames to listeners, so listeners must
 * not block.
 *
 * <p>Nothing the agent sends is trusted: lengths are checked against MAX_PAYLOAD before allocation and a protocol
 * violation closes the client (pending calls fail with {@link AgentException}).
 */
public final class AgentClient implements AutoCloseable {

    /** Connects over an already connected stream and performs the HELLO exchange within {@code helloTimeout}. */
    public static AgentClient handshake(SocketChannel channel, Duration helloTimeout) throws IOException {
        throw new UnsupportedOperationException("written in the agent-client change");
    }

    /** Starts a process. Output arrives on {@code listener}; the returned handle completes when EXIT arrives. */
    public ExecHandle exec(ExecRequest request, ExecListener listener) throws IOException {
        throw new UnsupportedOperationException();
    }

    public FileChunk readFile(String path, long offset, int maxLen) throws IOException { throw new UnsupportedOperationException(); }

    public long writeFile(String path, int mode, int flags, byte[] data) throws IOException { throw new UnsupportedOperationException(); }

    public List<FileEntry> listFiles(String path) throws IOException { throw new UnsupportedOperationException(); }

    public void sync() throws IOException { throw new UnsupportedOperationException(); }

    public void setClock(Instant now) throws IOException { throw new UnsupportedOperationException(); }

    public void seedRng(byte[] seed) throws IOException { throw new UnsupportedOperationException(); }

    public Duration ping() throws IOException { throw new UnsupportedOperationException(); }

    /** Installs the handler for agent-opened egress tunnels (TUNNEL_OPEN). Without one, tunnels are RESET. */
    public void setTunnelHandler(TunnelHandler handler) { throw new UnsupportedOperationException(); }

    public boolean isOpen() { return false; }

    @Override
    public void close() {}
}
