package dev.berth.engine.api;

/**
 * A change a run made to a file that steers coding agents (see the guard in the engine).
 *
 * @param change   "created", "modified" or "deleted"
 * @param reverted the old state was put back (guard mode revert)
 */
public record AgentConfigChange(String path, String change, boolean reverted) {}
