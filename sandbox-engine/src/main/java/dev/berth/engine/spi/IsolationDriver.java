package dev.berth.engine.spi;

import java.nio.file.Path;

/**
 * One isolation technology (bubblewrap namespaces, a QEMU microVM, gVisor) behind one interface.
 *
 * <p>A driver is stateless between calls apart from caches; everything a sandbox owns lives under the directories
 * the engine hands it in {@link StartRequest}. Implementations must be thread-safe: the engine calls {@link #start}
 * for different workspaces concurrently.
 *
 * <p>Every driver talks to its sandbox through the same guest agent and protocol
 * ({@code tool-schemas/agent-protocol.md}); the difference between drivers is only the boundary and what survives park.
 */
public interface IsolationDriver {

    /** Stable name used in configuration and tool results: {@code "namespace"}, {@code "microvm"}, {@code "gvisor"}. */
    String name();

    /** Whether this machine can run the driver, and if not, why (said to the user by {@code berth doctor}). */
    Availability probe();

    /** What the driver can honestly promise; reported with every workspace. */
    DriverCapabilities capabilities();

    /**
     * The limits a sandbox with resources {@code r} would get on this host, each saying whether it would be
     * enforced and how (for {@code berth doctor} and for parked workspaces). The default claims nothing.
     */
    default java.util.List<Limit> limits(Resources r) {
        return Limit.noneEnforced(r, "this driver does not enforce resource limits");
    }

    /**
     * What this driver's sandboxes run from, for the audit log and run receipts: a content-derived image id, or a
     * description naming what is shared with the host; null when unknown. Cheap after the first call.
     */
    default String imageId() {
        return null;
    }

    /**
     * Starts a sandbox: fresh, from the workspace's own parked state, or forked from a snapshot (see
     * {@link StartRequest.Mode}). Returns once the guest agent has answered HELLO.
     *
     * @throws SandboxException with a message that says what failed and what to do about it
     */
    Sandbox start(StartRequest request) throws SandboxException;

    /**
     * Takes over a sandbox that a previous server process left running for this workspace (the server died, its
     * sandbox did not), so that nothing the sandbox held is lost. Empty when there is nothing to take over; the
     * engine then cleans the runtime directory and the workspace resumes from its saved state (or cold) on next use.
     * The default suits drivers whose sandboxes end with the server (bubblewrap dies with its parent).
     *
     * @param request the workspace's directories and resources, with mode {@link StartRequest.Resume}
     * @throws SandboxException when a sandbox was found but could not be taken over (it has been stopped)
     */
    default java.util.Optional<Sandbox> adopt(StartRequest request) throws SandboxException {
        return java.util.Optional.empty();
    }

    /**
     * Waits (bounded) for work a driver lets finish after a call has returned, such as a parked sandbox's process
     * exiting after its state was made durable. The engine calls it at shutdown, after parking, so that nothing of a
     * park outlives the server. Default: nothing to wait for.
     */
    default void quiesce() {
    }

    /**
     * Called before the engine deletes a workspace's state directory: waits for what the driver still does with it in
     * the background after a call returned (a parked machine's process exiting, a park's digests) and ends what need
     * not finish, so that nothing writes into the directory while it is deleted. Default: nothing to wait for.
     */
    default void release(Path stateDir) {
    }

    /**
     * Whether {@code stateDir} holds a complete saved state with memory (a finished park), so that the next start
     * restores it rather than booting cold. Default: false (drivers whose park keeps files only).
     */
    default boolean hasSavedMemory(Path stateDir) {
        return false;
    }

    /**
     * Removes whatever a crashed server may have left for this runtime directory (mounts, processes, sockets).
     * Called by the engine at start-up for every runtime directory it finds, before it deletes the directory.
     */
    void cleanupRuntime(Path runtimeDir);

    /**
     * Whether a workspace forked from a snapshot of this driver still uses the snapshot's files, so that the snapshot
     * cannot be deleted while such a fork (or a snapshot of one) is open. False where a fork keeps everything it needs
     * (its own links or copies): then the snapshot may be deleted while forks of it live. Default: true.
     */
    default boolean forksNeedSnapshot() {
        return true;
    }

    /**
     * Copies the driver's persisted state of a workspace into a snapshot directory while the workspace is parked
     * (the engine parks a running workspace first only if the driver cannot {@link Sandbox#snapshot} it live).
     * Most drivers copy their state directory; the microVM driver also keeps the memory image.
     */
    void snapshotParked(Path workspaceStateDir, Path snapshotStateDir) throws SandboxException;
}
