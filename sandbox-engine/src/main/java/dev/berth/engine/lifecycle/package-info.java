/**
 * A workspace's moves with real sandboxes: open (fresh, forked or from the warm pool), reopen, resume, park, close
 * and shutdown ({@link dev.berth.engine.lifecycle.WorkspaceLifecycle}), the idle policy that parks and closes on the
 * engine's clock ({@link dev.berth.engine.lifecycle.IdleReaper}), what a new owner of a home does with what the
 * previous process left ({@link dev.berth.engine.lifecycle.Recovery}), and the long-lived threads sandboxes are
 * started on ({@link dev.berth.engine.lifecycle.SandboxStarter}).
 *
 * <p>Internal to the engine; not for library users (the library's API is {@code dev.berth.engine}). The top of the
 * engine's layers: it uses {@code workspace}, {@code run}, {@code template}, {@code evidence} and {@code egress},
 * and nothing of the engine uses it but the root package's front ({@code Engine}, {@code Ports}).
 */
package dev.berth.engine.lifecycle;
