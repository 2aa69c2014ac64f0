package dev.berth.engine;

import dev.berth.engine.spi.IsolationDriver;
import java.nio.file.Path;
import java.util.List;

/**
 * Engine settings.
 *
 * @param home                  where workspaces, snapshots, images and runtime files live
 * @param drivers               isolation drivers in order of preference (strongest first)
 * @param defaultIsolation      driver used when open_workspace names none; null = first available in {@code drivers}
 * @param requiredIsolation     if set, opening a workspace on any other driver is refused (e.g. "microvm" for
 *                              untrusted work); never silently substituted
 * @param defaultTimeoutSeconds run timeout when the caller gives none
 * @param maxTimeoutSeconds     ceiling for run timeouts
 * @param maxOutputBytes        per-stream output kept in a run result (head and tail)
 * @param idleParkSeconds       persistent workspaces idle this long are parked (0 = never)
 * @param idleCloseSeconds      ephemeral workspaces idle this long are closed (0 = never)
 * @param maxWorkspaces         live (not closed) workspaces at most
 * @param guard                 what happens when a run changes agent configuration files (.claude/, .mcp.json, ...)
 * @param egress                the egress proxy and the operator's ceiling policy; null = no way out at all
 */
public record EngineConfig(Path home, List<IsolationDriver> drivers, String defaultIsolation, String requiredIsolation,
                           int defaultTimeoutSeconds, int maxTimeoutSeconds, int maxOutputBytes,
                           long idleParkSeconds, long idleCloseSeconds, int maxWorkspaces, GuardMode guard, EgressSettings egress) {

    public EngineConfig {
        drivers = List.copyOf(drivers);
        if (drivers.isEmpty()) throw new IllegalArgumentException("at least one isolation driver is needed");
    }

    public static EngineConfig defaults(Path home, List<IsolationDriver> drivers) {
        return new EngineConfig(home, drivers, null, null, 120, 3600, 64 * 1024, 900, 3600, 64, GuardMode.REPORT, null);
    }

    public EngineConfig withDefaultIsolation(String isolation) {
        return new EngineConfig(home, drivers, isolation, requiredIsolation, defaultTimeoutSeconds, maxTimeoutSeconds,
                maxOutputBytes, idleParkSeconds, idleCloseSeconds, maxWorkspaces, guard, egress);
    }

    public EngineConfig withGuard(GuardMode mode) {
        return new EngineConfig(home, drivers, defaultIsolation, requiredIsolation, defaultTimeoutSeconds, maxTimeoutSeconds,
                maxOutputBytes, idleParkSeconds, idleCloseSeconds, maxWorkspaces, mode, egress);
    }

    public EngineConfig withEgress(EgressSettings settings) {
        return new EngineConfig(home, drivers, defaultIsolation, requiredIsolation, defaultTimeoutSeconds, maxTimeoutSeconds,
                maxOutputBytes, idleParkSeconds, idleCloseSeconds, maxWorkspaces, guard, settings);
    }
}
