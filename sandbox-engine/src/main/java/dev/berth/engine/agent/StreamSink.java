package dev.berth.engine.agent;

import java.nio.ByteBuffer;

/** Receives what the far end of a stream inside the sandbox sends (a port stream's app, a tunnel's client). */
public interface StreamSink {
    /** Bytes from inside. Called on the agent reader thread; must not block. */
    void onData(ByteBuffer data);

    /** The far end will send no more (CLOSE). */
    void onClose();

    /** The agent aborted the stream, or the connection to the agent was lost. */
    void onReset(String reason);

    /** Bytes queued by a {@code write} that returned false have all been sent: the caller may read its source again. */
    default void onWritable() {}
}
