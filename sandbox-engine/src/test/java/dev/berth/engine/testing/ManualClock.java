package dev.berth.engine.testing;

import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;

/**
 * A clock a test moves by hand ({@code EngineConfig.withClock}), so idle parking and TTLs are tested without waiting
 * for them. Starts at the real now, so that records written with it look ordinary. Thread-safe.
 */
public final class ManualClock implements InstantSource {
    private volatile Instant now = Instant.now();

    @Override
    public Instant instant() { return now; }

    /** Moves the clock forward by {@code d}. */
    public synchronized void advance(Duration d) {
        now = now.plus(d);
    }
}
