package dev.berth.engine;

import java.time.Instant;

/** A named checkpoint of a workspace, from which new workspaces can be forked. */
public record SnapshotInfo(String id, String name, String workspaceId, String isolation, boolean memoryKept,
                           long stateBytes, Instant createdAt) {}
