package dev.berth.engine;

import dev.berth.engine.api.EngineConfig;

import java.time.Duration;
import java.time.Instant;
import java.time.InstantSource;

/**
 * A clock a test moves by hand ({@link EngineConfig#withClock}), so idle parking and TTLs are tested without waiting
 * for them. Starts at the real now, so records it ends up in look ordinary. Thread-safe.
 */
public final class TestClock implements InstantSource {
    private volatile Instant now = Instant.now();

    @Override
    public Instant instant() { return now; }

    /** Moves the clock forward by {@code d}. */
    public synchronized void advance(Duration d) {
        now = now.plus(d);
    }
}
