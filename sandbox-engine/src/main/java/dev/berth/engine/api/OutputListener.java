package dev.berth.engine.api;

/** Receives a run's output while it runs (for streaming to the client). Must not block for long. */
public interface OutputListener {
    OutputListener NONE = (stream, data) -> {};

    /** {@code stream} is "stdout" or "stderr". */
    void onOutput(String stream, byte[] data);
}
