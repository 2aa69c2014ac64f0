package dev.berth.engine.agent;

import java.io.IOException;
import java.util.concurrent.CompletableFuture;

/** A started process. Thread-safe. */
public interface ExecHandle {
    /** Guest pid of the started process. */
    int pid();
    /** The protocol channel of this EXEC: egress tunnels its process tree opens carry it ({@link Tunnel#execChannel()}). */
    int channel();
    void writeStdin(byte[] data) throws IOException;
    void closeStdin() throws IOException;
    /** Sends {@code signo} to the whole process tree of this run. */
    void signal(int signo) throws IOException;
    /** Completes with the EXIT frame, or exceptionally with {@link AgentException} if the connection is lost. */
    CompletableFuture<ExecExit> exit();
}
