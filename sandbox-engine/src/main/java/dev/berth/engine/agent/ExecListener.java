package dev.berth.engine.agent;

/** Receives a process's output as it arrives. Called on the client's reader thread: must not block. */
public interface ExecListener {
    void onStdout(byte[] data);
    void onStderr(byte[] data);

    /**
     * The process runs on protocol channel {@code channel}. Called on the reader thread before any egress tunnel its
     * process tree opens is handed to the tunnel handler, so a listener can map the channel to its run in time.
     */
    default void onStarted(int channel) {}
}
