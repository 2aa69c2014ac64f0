package dev.berth.engine.workspace;

import java.time.Instant;

/**
 * A background process as its workspace sees it: what the record, the idle policy and the room check need. The run
 * package's {@code BackgroundProcess} is the one implementation; the workspace tracks processes without depending on
 * how they run. Implementations are thread-safe.
 */
public interface TrackedProcess {
    /** Its id ({@code p-...}), fixed. */
    String id();

    /** Still running, or frozen with a parked workspace (suspended), as far as the engine knows. */
    boolean running();

    /** Over and its end seen: it may be forgotten to make room for another. */
    boolean finished();

    /** When it last wrote output (or started), on the engine's clock: activity for the idle policy. */
    Instant lastOutputAt();

    /** What the workspace record keeps of it, or null when it cannot be re-attached (no run name) or is over. */
    Store.ProcessRecord record();

    /** The process is over as far as the engine is concerned (its workspace forgets it). Idempotent. */
    void ended();
}
