package dev.berth.engine.api;

import dev.berth.engine.spi.DriverCapabilities;
import dev.berth.engine.spi.Limit;
import dev.berth.engine.spi.Resources;
import java.time.Instant;

/**
 * A snapshot in time of one workspace's public facts. {@code secrets} names the operator's secret bindings its runs
 * get placeholders for (never values). {@code recovered} says what a fault (a server crash, a lost sandbox, a cold
 * boot) took from the workspace, until a run has reported it; null when nothing was lost. {@code idleParkAt}: when
 * the idle policy will park it if nothing happens (persistent, running); {@code expiresAt}: when it will be closed and
 * deleted (ephemeral: idle close or TTL); null when no timer applies.
 * {@code resources} are the limits asked for; {@code limits} say for each one whether it is enforced (as set up for
 * the running sandbox, or as the driver would set it up while parked). {@code image} names the image it runs on and its
 * digest (an imported one, or the driver's built-in image with its content-derived id).
 */
public record WorkspaceInfo(String id, String name, Lifecycle lifecycle, String isolation, WorkspaceState state,
                            DriverCapabilities capabilities, Instant createdAt, Instant lastUsedAt,
                            String fromSnapshot, int activeRuns, java.util.List<String> egressPolicy,
                            java.util.List<String> secrets, String recovered, Instant idleParkAt, Instant expiresAt,
                            Resources resources, java.util.List<Limit> limits, ImageRef image) {}
