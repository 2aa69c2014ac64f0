package dev.berth.engine.spi;

import java.nio.file.Path;
import java.util.Objects;

/**
 * Everything a driver needs to start one sandbox. A record so the driver interface stays stable as fields are added.
 *
 * @param workspaceId stable id, e.g. {@code ws-1a2b3c4d}
 * @param stateDir    persistent, driver-owned directory of this workspace (disk layers, parked memory); survives
 *                    server restarts for persistent workspaces and is deleted by the engine on close
 * @param runtimeDir  volatile, driver-owned directory (sockets, mount points, pid files); deleted on stop and at
 *                    server start-up after {@link IsolationDriver#cleanupRuntime}
 * @param mode        fresh, resume from {@code stateDir}, or fork from a snapshot's state directory
 * @param resources   limits
 * @param proxyPort   port the guest agent listens on inside the sandbox for egress (0 = no egress listener)
 * @param image       an imported image to run on instead of the driver's built-in one; null = the built-in one. A
 *                    workspace keeps the image it was created with (resume and fork pass the same one)
 */
public record StartRequest(String workspaceId, Path stateDir, Path runtimeDir, Mode mode, Resources resources,
                           int proxyPort, RootImage image) {

    /** A request on the driver's built-in image. */
    public StartRequest(String workspaceId, Path stateDir, Path runtimeDir, Mode mode, Resources resources, int proxyPort) {
        this(workspaceId, stateDir, runtimeDir, mode, resources, proxyPort, null);
    }

    public StartRequest {
        Objects.requireNonNull(workspaceId, "workspaceId");
        Objects.requireNonNull(stateDir, "stateDir");
        Objects.requireNonNull(runtimeDir, "runtimeDir");
        Objects.requireNonNull(mode, "mode");
        Objects.requireNonNull(resources, "resources");
    }

    /** How the sandbox starts. */
    public sealed interface Mode permits Fresh, Resume, Fork, Inspect {}

    /** A new, empty workspace on the base image. {@code stateDir} is empty. */
    public record Fresh() implements Mode {}

    /** The workspace's own state in {@code stateDir}, as left by {@link Sandbox#park} or by a crash. */
    public record Resume() implements Mode {}

    /**
     * A new workspace from a snapshot. {@code stateDir} is empty; the driver initialises it from
     * {@code snapshotStateDir} (copy-on-write where it can) and never modifies the snapshot.
     */
    public record Fork(Path snapshotStateDir) implements Mode {}

    /**
     * The workspace's files, read-only, without its memory: for a workspace whose saved state failed verification
     * (see {@link SandboxDamagedException}), so that its user can still read what it holds. The driver starts from
     * what is on the workspace's disk, writes nothing into {@code stateDir} (changes go to a throwaway layer in
     * {@code runtimeDir}), and the sandbox is destroyed after use, never parked. Drivers whose workspaces are never
     * damaged refuse it.
     */
    public record Inspect() implements Mode {}
}
