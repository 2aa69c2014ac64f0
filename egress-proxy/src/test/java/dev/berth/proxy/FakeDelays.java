package dev.berth.proxy;

import dev.berth.proxy.session.Delays;
import io.netty.util.concurrent.EventExecutor;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A timer on a fake clock: delayed tasks run (on their loop) only when the test advances the clock past their time, so
 * shaping is tested without waiting in real time. Thread-safe.
 */
final class FakeDelays implements Delays {
    final AtomicLong now = new AtomicLong(1_000_000_000L);
    private final List<Object[]> pending = new ArrayList<>();

    @Override
    public synchronized void after(EventExecutor loop, long nanos, Runnable task) {
        pending.add(new Object[] {now.get() + nanos, loop, task});
    }

    synchronized int pending() {
        return pending.size();
    }

    /** Moves the clock on and runs every task that is due by then. */
    void advance(java.time.Duration d) {
        List<Object[]> due = new ArrayList<>();
        synchronized (this) {
            long t = now.addAndGet(d.toNanos());
            pending.removeIf(p -> {
                if ((long) p[0] <= t) {
                    due.add(p);
                    return true;
                }
                return false;
            });
        }
        for (Object[] p : due) ((EventExecutor) p[1]).execute((Runnable) p[2]);
    }
}
