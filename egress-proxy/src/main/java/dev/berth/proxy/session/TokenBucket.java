package dev.berth.proxy.session;

/**
 * A token bucket: holds up to {@code capacity} tokens, refilled at {@code perSecond}; taking more than it holds
 * leaves it in debt (negative), which later refills pay back first. Time comes from the caller (the proxy's injected
 * clock), so tests never wait in real time. Thread-safe (every method is synchronized; callers that must see two
 * buckets consistently hold the {@link Quotas} admission lock around them).
 */
final class TokenBucket {
    private final double capacity;
    private final double perNano;
    private double tokens;   // guarded by this
    private long at;         // guarded by this

    TokenBucket(double capacity, double perSecond, long now) {
        this.capacity = capacity;
        this.perNano = perSecond / 1e9;
        this.tokens = capacity;
        this.at = now;
    }

    private void refill(long now) {
        if (now > at) {
            tokens = Math.min(capacity, tokens + (now - at) * perNano);
            at = now;
        }
    }

    /** Nanoseconds until {@code n} tokens are in the bucket (0: now). */
    synchronized long waitFor(double n, long now) {
        refill(now);
        if (tokens >= n) return 0;
        return (long) Math.ceil((n - tokens) / perNano);
    }

    /** Takes {@code n} tokens, into debt if need be; returns what is left (negative: in debt). */
    synchronized double take(double n, long now) {
        refill(now);
        tokens -= n;
        return tokens;
    }

    /** Is the bucket full, i.e. indistinguishable from a new one? */
    synchronized boolean full(long now) {
        refill(now);
        return tokens >= capacity;
    }
}
