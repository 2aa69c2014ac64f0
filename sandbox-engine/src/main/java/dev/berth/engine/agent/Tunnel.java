package dev.berth.engine.agent;

import java.nio.ByteBuffer;

/**
 * One egress tunnel: a byte stream to a client inside the sandbox. With an agent that has {@code CAP_TUNNEL_WINDOW}
 * the tunnel is flow controlled like a port stream (at most {@link #WINDOW} bytes in flight each way, so a client that
 * stops reading stops the upstream instead of growing the host's or the agent's buffers); with an older agent it is
 * not (the agent resets a tunnel whose client falls 8 MiB behind). Thread-safe.
 */
public interface Tunnel {
    /** Bytes either side may have sent and not yet had acknowledged by WINDOW, where the agent supports it. */
    int WINDOW = Protocol.TUNNEL_WINDOW;

    /** Port inside the sandbox the client connected to. */
    int port();
    /**
     * The EXEC channel whose process tree opened this connection ({@link ExecHandle#channel()}, this session), or 0
     * when the agent could not attribute it (a daemon that left its run's session and parent chain).
     */
    int execChannel();
    /** Whether this tunnel is flow controlled (the agent announced {@code CAP_TUNNEL_WINDOW}). */
    boolean flowControlled();
    /**
     * Queues bytes for the client inside the sandbox (DATA). Returns false when bytes are waiting for the agent's
     * credit: the caller should stop reading its source until {@link Sink#onWritable()}.
     */
    boolean write(ByteBuffer data);
    /** Whether nothing waits for the agent's credit (see {@link StreamChannel#writable()}). */
    boolean writable();
    /** No more bytes for the client (CLOSE, half close), sent once everything queued before it went out. */
    void shutdownOutput();
    /** Aborts the tunnel (RESET) with a reason. */
    void reset(String reason);
    /**
     * The sink has delivered {@code bytes} of what the client sent onward: the agent may read that many more. A sink
     * of a flow-controlled tunnel that never calls this receives at most {@link #WINDOW} bytes. No-op otherwise.
     */
    void consumed(int bytes);

    /** Receives what the client inside sends. Called on the reader thread; must not block. */
    interface Sink extends StreamSink {}
}
