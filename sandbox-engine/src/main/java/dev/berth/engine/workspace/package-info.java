/**
 * A workspace as the engine keeps it: its record ({@link dev.berth.engine.workspace.Workspace}), the one table of
 * its states ({@link dev.berth.engine.workspace.Transitions}, {@link dev.berth.engine.workspace.WorkspaceAction}),
 * the live workspaces by id with their names and quotas ({@link dev.berth.engine.workspace.WorkspaceRegistry}), the
 * home on disk ({@link dev.berth.engine.workspace.Store}, {@link dev.berth.engine.workspace.RunJournal},
 * {@link dev.berth.engine.workspace.HomeLock}) and the background processes it tracks, seen through
 * {@link dev.berth.engine.workspace.TrackedProcess} (the {@code run} package starts them).
 *
 * <p>Internal to the engine; not for library users. Its public types are public only so that the engine's other
 * packages can use them; the library's API is {@code dev.berth.engine}. This package depends on nothing of the
 * engine but the root package's public records and {@code egress} (a workspace holds its egress bridge).
 */
package dev.berth.engine.workspace;
