/**
 * What new workspaces start from: snapshots taken, listed and deleted ({@link dev.berth.engine.template.Snapshots},
 * {@link dev.berth.engine.template.SnapshotCatalog}), forks of one snapshot opened at once
 * ({@link dev.berth.engine.template.ForkMany}) and fresh sandboxes started ahead
 * ({@link dev.berth.engine.template.WarmPool}).
 *
 * <p>Internal to the engine; not for library users (the library's API is {@code dev.berth.engine}). Depends on
 * {@code workspace}, {@code run} (a pool member's warm-up runs) and {@code evidence}; a fork is opened through
 * {@link dev.berth.engine.template.ForkMany.Opener}, which the lifecycle implements, so this package never depends
 * on it.
 */
package dev.berth.engine.template;
