package dev.berth.engine.agent;

import java.util.List;

/**
 * How a process ended: {@code termSignal} is 0 when it exited by itself; {@code timedOut} when the agent killed it.
 * {@code left} lists processes of a confined run that were still alive when its command ended (and ended with it),
 * the first {@link Protocol#LEFT_LISTED} by pid; {@code leftTotal} counts all of them (0 from an agent without
 * CAP_EXIT_LEFT).
 */
public record ExecExit(int exitCode, int termSignal, boolean timedOut, List<LeftProcess> left, int leftTotal) {
    public ExecExit {
        left = List.copyOf(left);
    }

    public ExecExit(int exitCode, int termSignal, boolean timedOut) {
        this(exitCode, termSignal, timedOut, List.of(), 0);
    }

    /** A process a run left behind: its pid inside the run's pid namespace and its command line (cut to 200 bytes). */
    public record LeftProcess(int pid, String command) {}
}
