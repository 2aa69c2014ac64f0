package dev.berth.engine.microvm;

import dev.berth.engine.agent.AgentClient;
import java.io.IOException;
import java.nio.charset.StandardCharsets;

/**
 * The limits on runs inside a microVM guest, as the guest reports them: the guest's init puts every run (confined
 * below the agent, agent {@code --isolate-runs --run-cgroup}) in the cgroup v2 group {@value #GROUP}, with
 * {@code memory.max} = the memory available at boot minus 32 MiB for the kernel and the agent; the host sets {@code pids.max} after
 * every start (a warm base or a fork booted with another workspace's limit) and reads both back through the agent.
 * The agent stays in the root group: runs that exhaust these limits cannot starve it. These limits protect the agent
 * and the workspace's own responsiveness; the host's own protection is the VM and the jailed QEMU.
 *
 * @param confined  whether the agent confines runs (HELLO {@code CAP_CONFINED_RUNS}); false for an image built
 *                  before confined guest runs
 * @param pidsMax   {@code pids.max} of the runs' group as read back, -1 when there is none or it is {@code max}
 * @param memoryMiB {@code memory.max} of the runs' group in MiB as read back, -1 when there is none or it is {@code max}
 * @param problem   why a limit is missing (for the report), or {@code null}
 */
record GuestRunLimits(boolean confined, long pidsMax, long memoryMiB, String problem) {

    static final String GROUP = "/sys/fs/cgroup/berth-runs";

    /** A virtual thread per read asked beside another (it only waits on the agent's socket); keeps nothing. */
    private static final java.util.concurrent.Executor READS = r -> Thread.ofVirtual().name("berth-run-limits").start(r);

    /** Sets {@code pids.max} of the runs' group to {@code maxPids} (when {@code maxPids > 0}) and reads the limits back. */
    static GuestRunLimits apply(AgentClient agent, int maxPids) {
        if (!agent.confinedRuns()) {
            return new GuestRunLimits(false, -1, -1, "this guest's agent does not confine runs (an image built before confined guest runs)");
        }
        String problem = null;
        if (maxPids > 0) {
            try {
                agent.writeFile(GROUP + "/pids.max", 0, 0, (maxPids + "\n").getBytes(StandardCharsets.US_ASCII)); // flags 0: no create, no truncate
            } catch (IOException e) {
                problem = "setting pids.max in the guest failed: " + e.getMessage();
            }
        }
        return readBack(agent, problem);
    }

    /** Reads the limits of the runs' group back (after an adopt: whatever the guest has now). */
    static GuestRunLimits readBack(AgentClient agent, String problem) {
        if (!agent.confinedRuns()) return apply(agent, 0); // says why there is nothing
        // the two reads are independent: asked together they cost one round trip to the guest, not two (each is
        // 10-15 ms under TCG, and a resume waits for them)
        var memRead = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
            try {
                return agent.readFile(GROUP + "/memory.max", 0, 64).data();
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }, READS);
        try {
            long pids = number(new String(agent.readFile(GROUP + "/pids.max", 0, 64).data(), StandardCharsets.US_ASCII));
            long mem = number(new String(memRead.join(), StandardCharsets.US_ASCII));
            return new GuestRunLimits(true, pids, mem < 0 ? -1 : mem >> 20, problem);
        } catch (IOException | java.util.concurrent.CompletionException e) {
            memRead.exceptionally(x -> null).join();
            String why = e instanceof java.util.concurrent.CompletionException c && c.getCause() instanceof java.io.UncheckedIOException u
                    ? u.getCause().getMessage() : e.getMessage();
            return new GuestRunLimits(true, -1, -1, "the guest has no cgroup for runs (" + GROUP + ": " + why + ")");
        }
    }

    private static long number(String s) {
        String t = s.strip();
        return t.matches("\\d{1,18}") ? Long.parseLong(t) : -1;
    }
}
