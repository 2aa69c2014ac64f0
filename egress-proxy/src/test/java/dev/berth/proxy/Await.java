package dev.berth.proxy;

import java.time.Duration;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * Waiting on a condition in the proxy's tests, never on the clock (like the engine's {@code dev.berth.engine.Await}).
 * The bound times nothing: it only keeps a broken test from hanging, so it is generous for a loaded machine.
 */
public final class Await {
    public static final Duration BOUND = Duration.ofSeconds(10);

    private Await() {}

    /** Polls until {@code condition} holds; fails with "timed out ... waiting until {@code what}" after {@link #BOUND}. */
    public static void until(String what, BooleanSupplier condition) throws InterruptedException {
        until(what, BOUND, condition);
    }

    public static void until(String what, Duration bound, BooleanSupplier condition) throws InterruptedException {
        if (!within(bound, condition)) {
            throw new AssertionError("timed out after " + bound.toSeconds() + " s waiting until " + what);
        }
    }

    /** Polls until {@code condition} holds or {@code bound} has passed; returns whether it held. */
    public static boolean within(Duration bound, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + bound.toNanos();
        long pause = 2;
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) return false;
            Thread.sleep(pause);
            pause = Math.min(pause * 2, 50);
        }
        return true;
    }

    /**
     * Polls {@code probe} until it returns non-null and returns that; after {@link #BOUND} fails naming {@code what}
     * and what {@code seen} shows then (the records or decisions looked through).
     */
    public static <T> T result(String what, Supplier<T> probe, Supplier<?> seen) throws InterruptedException {
        Object[] found = new Object[1];
        if (!within(BOUND, () -> (found[0] = probe.get()) != null)) {
            throw new AssertionError("timed out after " + BOUND.toSeconds() + " s waiting for " + what + "; saw " + seen.get());
        }
        @SuppressWarnings("unchecked")
        T t = (T) found[0];
        return t;
    }
}
