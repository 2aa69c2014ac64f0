package dev.berth.engine;

import dev.berth.engine.spi.DriverCapabilities;
import dev.berth.engine.spi.Limit;
import dev.berth.engine.spi.Resources;
import java.time.Instant;

/**
 * A snapshot in time of one workspace's public facts. {@code secrets} names the operator's secret bindings its runs
 * get placeholders for (never values). {@code resources} are the limits asked for; {@code limits} say for each one
 * whether it is enforced (as set up for the running sandbox, or as the driver would set it up while parked).
 */
public record WorkspaceInfo(String id, String name, Lifecycle lifecycle, String isolation, WorkspaceState state,
                            DriverCapabilities capabilities, Instant createdAt, Instant lastUsedAt,
                            String fromSnapshot, int activeRuns, java.util.List<String> egressPolicy,
                            java.util.List<String> secrets, Resources resources, java.util.List<Limit> limits) {}
