package dev.berth.engine.agent;

/** Receives a process's output as it arrives. Called on the client's reader thread: must not block. */
public interface ExecListener {
    void onStdout(byte[] data);
    void onStderr(byte[] data);
}
