/**
 * What the engine writes down about what happened: the shapes of its audit records, one method per event, with run
 * receipts and the engine's meters ({@link dev.berth.engine.evidence.EngineEvidence}), and the guard that looks at
 * what a run changed in agent configuration files ({@link dev.berth.engine.evidence.AgentConfigGuard}).
 *
 * <p>Internal to the engine; not for library users (the library's API is {@code dev.berth.engine}). Depends on the
 * root package's public records, {@code workspace} (a record names its workspace) and {@code egress} (a run's
 * egress summary).
 */
package dev.berth.engine.evidence;
