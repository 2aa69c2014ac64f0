package dev.berth.engine.agent;

import java.nio.ByteBuffer;

/** One egress tunnel: a byte stream to a client inside the sandbox. Thread-safe. */
public interface Tunnel {
    /** Port inside the sandbox the client connected to. */
    int port();
    /**
     * The EXEC channel whose process tree opened this connection ({@link ExecHandle#channel()}, this session), or 0
     * when the agent could not attribute it (a daemon that left its run's session and parent chain).
     */
    int execChannel();
    /** Sends bytes to the client inside the sandbox (DATA). */
    void write(ByteBuffer data);
    /** No more bytes for the client (CLOSE, half close). */
    void shutdownOutput();
    /** Aborts the tunnel (RESET) with a reason. */
    void reset(String reason);

    /** Receives what the client inside sends. Called on the reader thread; must not block. */
    interface Sink {
        void onData(ByteBuffer data);
        /** The client will send no more (CLOSE). */
        void onClose();
        /** The agent aborted the tunnel, or the connection to the agent was lost. */
        void onReset(String reason);
    }
}
