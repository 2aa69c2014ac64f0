package dev.berth.engine.api;

import java.time.Instant;

/**
 * A named checkpoint of a workspace, from which new workspaces can be forked. {@code stateBytes}: what it holds on
 * disk; {@code dependents}: the live workspaces forked from it and the snapshots taken of those, which keep it from
 * being deleted (empty in results that do not list them).
 */
public record SnapshotInfo(String id, String name, String workspaceId, String isolation, boolean memoryKept,
                           long stateBytes, Instant createdAt, java.util.List<String> dependents) {

    public SnapshotInfo withDependents(java.util.List<String> d) {
        return new SnapshotInfo(id, name, workspaceId, isolation, memoryKept, stateBytes, createdAt, java.util.List.copyOf(d));
    }
}
