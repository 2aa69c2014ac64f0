package dev.berth.engine.spi;

import dev.berth.engine.agent.AgentClient;
import java.nio.file.Path;

/**
 * One running sandbox, owned by exactly one workspace. Not thread-safe for lifecycle calls (park, snapshot,
 * destroy): the engine serialises them per workspace. {@link #agent()} may be used concurrently.
 */
public interface Sandbox {

    /** The connected guest agent: exec, files, tunnels. */
    AgentClient agent();

    /** Host process id of the sandbox (bwrap, QEMU), for diagnostics. */
    long hostPid();

    /**
     * Stops the sandbox, keeping its state in the workspace's state directory so that
     * {@link StartRequest.Resume} brings it back. Frees CPU and memory.
     *
     * @return whether memory (running processes) was kept, and how large the saved state is
     */
    ParkOutcome park() throws SandboxException;

    /**
     * Writes a snapshot of the running sandbox into {@code snapshotStateDir} and keeps running. Drivers that cannot
     * snapshot live throw {@link UnsupportedOperationException}; the engine then parks, calls
     * {@link IsolationDriver#snapshotParked}, and resumes.
     */
    ParkOutcome snapshot(Path snapshotStateDir) throws SandboxException;

    /** Kills the sandbox at once. Its state directory is left as is; the runtime directory is cleaned. Idempotent. */
    void destroy();

    /**
     * The resource limits as set up for this sandbox, each saying whether it is enforced. The default claims
     * nothing; drivers override it with what they actually did.
     */
    default java.util.List<Limit> limits() {
        return java.util.List.of();
    }

    /**
     * A run in this sandbox has ended: the sandbox may write what the run left dirty out in the background, so that a
     * later snapshot does not pay for it (the namespace driver's layer pool: a btrfs commit). Never blocks; the
     * future completes when that write-out has ended (at once where there is none).
     */
    default java.util.concurrent.CompletableFuture<Void> flushInBackground() {
        return java.util.concurrent.CompletableFuture.completedFuture(null);
    }

    /** True while the sandbox process is alive. */
    boolean isAlive();

    /** Result of park or snapshot. */
    record ParkOutcome(boolean memoryKept, long stateBytes, long millis) {}
}
