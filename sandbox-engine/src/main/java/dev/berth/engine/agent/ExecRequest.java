package dev.berth.engine.agent;

import java.util.List;
import java.util.Objects;

/**
 * One EXEC. {@code env} is the complete environment ("K=V" entries); the agent adds only {@code BERTH_RUN}.
 *
 * @param timeoutMillis 0 = no agent-side timeout
 * @param stdinOpen     keep stdin as a pipe (EXEC_STDIN); otherwise the process reads /dev/null
 * @param cols          with {@code rows}: run on a pseudo-terminal of that size (EXEC_TTY; 1..TTY_MAX); 0 = pipes
 */
public record ExecRequest(List<String> argv, List<String> env, String cwd, long timeoutMillis, boolean stdinOpen,
                          int cols, int rows) {
    /** Largest terminal width or height (the protocol's TTY_MAX). */
    public static final int TTY_MAX = Protocol.TTY_MAX;

    public ExecRequest {
        argv = List.copyOf(argv);
        env = List.copyOf(env);
        Objects.requireNonNull(cwd, "cwd");
        if (argv.isEmpty()) throw new IllegalArgumentException("argv must not be empty");
        if (timeoutMillis < 0 || timeoutMillis > 0xFFFF_FFFFL) throw new IllegalArgumentException("timeoutMillis out of range: " + timeoutMillis);
        if ((cols == 0) != (rows == 0) || cols < 0 || rows < 0 || cols > TTY_MAX || rows > TTY_MAX) {
            throw new IllegalArgumentException("terminal size " + cols + "x" + rows + " is outside 1.." + TTY_MAX);
        }
    }

    public ExecRequest(List<String> argv, List<String> env, String cwd, long timeoutMillis, boolean stdinOpen) {
        this(argv, env, cwd, timeoutMillis, stdinOpen, 0, 0);
    }

    /** Whether the command runs on a pseudo-terminal. */
    public boolean tty() { return cols > 0; }
}
