package dev.berth.engine;

import dev.berth.engine.spi.DriverCapabilities;
import java.time.Instant;

/** A snapshot in time of one workspace's public facts. */
public record WorkspaceInfo(String id, String name, Lifecycle lifecycle, String isolation, WorkspaceState state,
                            DriverCapabilities capabilities, Instant createdAt, Instant lastUsedAt,
                            String fromSnapshot, int activeRuns, java.util.List<String> egressPolicy) {}
