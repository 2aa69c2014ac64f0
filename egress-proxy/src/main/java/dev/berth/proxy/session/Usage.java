package dev.berth.proxy.session;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The counters of one workspace or one tenant, shared by all of its connections: open upstreams, a byte bucket and a
 * connection-setup bucket. Thread-safe (connections of one workspace run on several loops).
 *
 * <p>Implementation notes: the byte bucket holds the byte quota ({@code maxBytesPer...}) and refills it over the quota
 * window ({@code quotaWindowMs}), so a used-up quota comes back gradually instead of all at once when a window ends;
 * the connection bucket holds the burst and refills at the rate. {@link Quotas} decides admissions over a workspace's
 * and its tenant's counters together.
 */
final class Usage {
    final AtomicInteger openUpstreams = new AtomicInteger();
    /** "workspace 'ws-1'" or "tenant 't-1'": how refusals name whose limit it was. */
    final String who;
    final TokenBucket bytes;
    final TokenBucket connects;
    final long maxBytes;
    final Duration window;
    final int rate;
    final int burst;
    /** The settings' names, for refusals: which limit it was. */
    final String bytesKey;
    final String rateKey;

    Usage(String who, long maxBytes, Duration window, int rate, int burst, String bytesKey, String rateKey, long now) {
        this.who = who;
        this.maxBytes = maxBytes;
        this.window = window;
        this.rate = rate;
        this.burst = burst;
        this.bytesKey = bytesKey;
        this.rateKey = rateKey;
        this.bytes = new TokenBucket(maxBytes, maxBytes / (window.toNanos() / 1e9), now);
        this.connects = new TokenBucket(burst, rate, now);
    }

    /** Nothing in flight and both buckets full: forgetting it loses nothing. */
    boolean idle(long now) {
        return openUpstreams.get() == 0 && bytes.full(now) && connects.full(now);
    }
}
