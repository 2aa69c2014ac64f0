package dev.berth.engine.agent;

import java.io.IOException;
import java.util.concurrent.CompletableFuture;

/** A started process. Thread-safe. */
public interface ExecHandle {
    /** Guest pid of the started process. */
    int pid();
    /**
     * The run's name in the agent ({@code <session>-<chan>}, protocol "Re-attaching a run"): what a later connection
     * passes to {@link AgentClient#attach} to take the run over. Null when the agent predates it (no CAP_ATTACH).
     */
    String run();
    /** Output bytes the agent dropped while this run was detached (an attached handle; 0 for a fresh EXEC). */
    default long droppedWhileDetached() { return 0; }
    /** The protocol channel of this EXEC: egress tunnels its process tree opens carry it ({@link Tunnel#execChannel()}). */
    int channel();
    void writeStdin(byte[] data) throws IOException;
    void closeStdin() throws IOException;
    /** Sets the terminal size of a run started on a terminal ({@link ExecRequest#tty()}); its programs see SIGWINCH. */
    default void resize(int cols, int rows) throws IOException { throw new IllegalStateException("this run has no terminal"); }
    /** Sends {@code signo} to the whole process tree of this run. */
    void signal(int signo) throws IOException;
    /** Completes with the EXIT frame, or exceptionally with {@link AgentException} if the connection is lost. */
    CompletableFuture<ExecExit> exit();
}
