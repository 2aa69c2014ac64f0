package dev.berth.engine.agent;

import java.nio.ByteBuffer;

/**
 * One inbound connection to {@code 127.0.0.1:port} inside the sandbox, carried over the agent channel (agent
 * protocol: PORT_OPEN). Flow control is credit based in both directions (WINDOW, at most {@link #WINDOW} bytes in
 * flight each way), so neither the host nor the agent buffers more than that per stream when the far end does not
 * read. Thread-safe.
 */
public interface PortStream {
    /** Bytes either side may have sent and not yet had acknowledged by WINDOW. */
    int WINDOW = Protocol.PORT_WINDOW;

    /** Port inside the sandbox. */
    int port();

    /**
     * Queues bytes for the app. Returns false when bytes are waiting for the agent's credit: the caller should stop
     * reading its source until {@link Sink#onWritable()} (host memory then stays bounded by what it already read).
     */
    boolean write(ByteBuffer data);

    /** No more bytes for the app (CLOSE, half close), sent once everything queued before it went out. */
    void shutdownOutput();

    /** Aborts the stream (RESET) with a reason; the app sees a connection reset. */
    void reset(String reason);

    /**
     * The sink has delivered {@code bytes} of what it received onward (e.g. written to the browser): the agent may
     * read that many more bytes from the app. A sink that never calls this receives at most {@link #WINDOW} bytes.
     */
    void consumed(int bytes);

    /** Receives what the app sends. Called on the agent reader thread; must not block. */
    interface Sink extends StreamSink {}
}
