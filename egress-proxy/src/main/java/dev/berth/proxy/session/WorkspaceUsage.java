package dev.berth.proxy.session;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongSupplier;

/**
 * Per-workspace counters shared by all of a workspace's connections: open upstreams, bytes in the current quota
 * window, and a token bucket for connection setup. Thread-safe (connections of one workspace run on several loops).
 *
 * <p>Implementation notes: bytes count heads and bodies in both directions. Once the window's quota is used up,
 * {@link #quotaRefusal} refuses every new request and CONNECT until the window ends (the relays already running are
 * cut by {@link #addBytes}); the window starts with the first byte counted after the previous one ended.
 */
public final class WorkspaceUsage {
    final AtomicInteger openUpstreams = new AtomicInteger();
    private final LongSupplier nanos;
    private long windowStart;   // guarded by this
    private boolean windowOpen; // guarded by this
    private long bytes;         // guarded by this
    private double tokens = -1; // guarded by this; -1 = bucket not filled yet
    private long refilledAt;    // guarded by this

    WorkspaceUsage(LongSupplier nanos) {
        this.nanos = nanos;
    }

    /** Reserve an upstream slot; false if the workspace is at its limit. */
    public boolean tryOpen(int max) {
        while (true) {
            int n = openUpstreams.get();
            if (n >= max) return false;
            if (openUpstreams.compareAndSet(n, n + 1)) return true;
        }
    }

    public void closed() {
        openUpstreams.decrementAndGet();
    }

    private void roll(long windowNanos) {
        long now = nanos.getAsLong();
        if (!windowOpen || now - windowStart >= windowNanos) {
            windowOpen = true;
            windowStart = now;
            bytes = 0;
        }
    }

    /** Adds transferred bytes; returns false once the window's byte quota is exceeded. */
    public synchronized boolean addBytes(long n, Settings c) {
        roll(c.quotaWindow().toNanos());
        bytes += n;
        return bytes <= c.maxBytesPerWorkspace();
    }

    /** Null while the workspace may still send; otherwise why not and until when. */
    public synchronized String quotaRefusal(String workspaceId, Settings c) {
        long window = c.quotaWindow().toNanos();
        roll(window);
        if (bytes < c.maxBytesPerWorkspace()) return null;
        long left = Math.max(1, (windowStart + window - nanos.getAsLong() + 999_999_999L) / 1_000_000_000L);
        return "workspace '" + workspaceId + "' used its byte quota of " + c.maxBytesPerWorkspace() + " bytes (maxBytesPerWorkspace,"
                + " heads and bodies) in the current window of " + c.quotaWindow().toSeconds() + " s (quotaWindowMs); egress resumes in "
                + left + " s";
    }

    /** Takes one connection-setup token; null if there was one, otherwise the refusal. */
    public synchronized String tryConnect(String workspaceId, Settings c) {
        int rate = c.maxConnectsPerSecond();
        long now = nanos.getAsLong();
        if (tokens < 0) {
            tokens = rate;
        } else {
            tokens = Math.min(rate, tokens + (now - refilledAt) * (rate / 1e9));
        }
        refilledAt = now;
        if (tokens >= 1) {
            tokens -= 1;
            return null;
        }
        return "workspace '" + workspaceId + "' set up connections faster than " + rate + " per second (maxConnectsPerSecond)";
    }
}
