package dev.berth.proxy;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/** Per-workspace counters shared by all of a workspace's connections (quotas). */
final class WorkspaceUsage {
    final AtomicInteger openUpstreams = new AtomicInteger();
    final AtomicLong bytes = new AtomicLong();

    /** Reserve an upstream slot; false if the workspace is at its limit. */
    boolean tryOpen(int max) {
        while (true) {
            int n = openUpstreams.get();
            if (n >= max) return false;
            if (openUpstreams.compareAndSet(n, n + 1)) return true;
        }
    }

    void closed() {
        openUpstreams.decrementAndGet();
    }

    /** Adds transferred bytes; returns false once the lifetime byte quota is exceeded. */
    boolean addBytes(long n, long max) {
        return bytes.addAndGet(n) <= max;
    }
}
