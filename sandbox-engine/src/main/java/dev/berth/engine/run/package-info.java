/**
 * Runs in a workspace's sandbox: the one choreography of a run, foreground and background
 * ({@link dev.berth.engine.run.RunFlow}: evidence, credentials, egress, journal, and their release), one command
 * ({@link dev.berth.engine.run.Runner}), its output ({@link dev.berth.engine.run.BoundedOutput},
 * {@link dev.berth.engine.run.OutputLog}), background processes and their hand-over from one agent connection to
 * the next ({@link dev.berth.engine.run.BackgroundProcess}, {@link dev.berth.engine.run.ProcessHandover}), file
 * access ({@link dev.berth.engine.run.FileOps}, {@link dev.berth.engine.run.WorkspacePaths}), and a run's
 * credentials: secret placeholders and the egress proxy's CA ({@link dev.berth.engine.run.RunCredentials},
 * {@link dev.berth.engine.run.TrustBundle}).
 *
 * <p>Internal to the engine; not for library users (the library's API is {@code dev.berth.engine}). Depends on
 * {@code workspace} (a run is in one), {@code egress} and {@code evidence}; never on the lifecycle or templates (the
 * warm pool's refill after a first run is a callback).
 */
package dev.berth.engine.run;
