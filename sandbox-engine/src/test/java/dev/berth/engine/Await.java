package dev.berth.engine;

import java.time.Duration;

/**
 * Waiting on a condition in tests, never on the clock. The bound times nothing: it only keeps a broken test from
 * hanging, so it is generous (TCG guests on a loaded 2-core CI machine are slow).
 */
public final class Await {
    /** A condition that may throw (a guest command, a file read). */
    @FunctionalInterface
    public interface Condition {
        boolean holds() throws Exception;
    }

    public static final Duration BOUND = Duration.ofSeconds(60);

    private Await() {}

    /** Polls until {@code condition} holds; fails with "timed out waiting until {@code what}" after {@link #BOUND}. */
    public static void until(String what, Condition condition) throws Exception {
        until(what, BOUND, condition);
    }

    /**
     * Polls until {@code condition} holds or {@code bound} has passed; returns whether it held, so the caller can fail
     * with its own account of what differs. What the condition throws (a failed assertion included) goes to the caller.
     */
    public static boolean within(Duration bound, Condition condition) throws Exception {
        long deadline = System.nanoTime() + bound.toNanos();
        long pause = 10;
        while (!condition.holds()) {
            if (System.nanoTime() > deadline) return false;
            Thread.sleep(pause);
            pause = Math.min(pause * 2, 200);
        }
        return true;
    }

    public static void until(String what, Duration bound, Condition condition) throws Exception {
        if (!within(bound, condition)) throw new AssertionError("timed out after " + bound.toSeconds() + " s waiting until " + what);
    }
}
