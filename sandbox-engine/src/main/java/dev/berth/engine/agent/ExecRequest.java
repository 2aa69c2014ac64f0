package dev.berth.engine.agent;

import java.util.List;
import java.util.Objects;

/**
 * One EXEC. {@code env} is the complete environment ("K=V" entries); the agent adds only {@code BERTH_RUN}.
 *
 * @param timeoutMillis 0 = no agent-side timeout
 * @param stdinOpen     keep stdin as a pipe (EXEC_STDIN); otherwise the process reads /dev/null
 */
public record ExecRequest(List<String> argv, List<String> env, String cwd, long timeoutMillis, boolean stdinOpen) {
    public ExecRequest {
        argv = List.copyOf(argv);
        env = List.copyOf(env);
        Objects.requireNonNull(cwd, "cwd");
        if (argv.isEmpty()) throw new IllegalArgumentException("argv must not be empty");
        if (timeoutMillis < 0 || timeoutMillis > 0xFFFF_FFFFL) throw new IllegalArgumentException("timeoutMillis out of range: " + timeoutMillis);
    }
}
