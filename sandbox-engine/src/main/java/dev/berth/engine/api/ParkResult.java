package dev.berth.engine.api;

/**
 * Result of park.
 *
 * @param memoryKept     running processes and memory were kept (microVM); otherwise only files
 * @param alreadyParked  nothing was done: it was parked already
 */
public record ParkResult(WorkspaceInfo workspace, boolean memoryKept, boolean alreadyParked, long stateBytes,
                         long durationMs, String note) {}
