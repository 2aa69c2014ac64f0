package dev.berth.proxy.session;

import java.util.function.LongSupplier;

/**
 * A connection's view of the quotas it is counted against: its workspace's and, when the engine named one, its
 * tenant's. Token buckets (see {@link Usage}) shape instead of refuse: a connection setup over the rate, or a request
 * while the byte quota is used up, is told to wait for its turn up to {@link Shaping#maxDelay()}, and refused (with
 * the limit named) only when its turn is further away. Thread-safe.
 */
public final class Quotas {
    /**
     * @param waitNanos how long the caller must wait before it goes on (0: at once)
     * @param refusal why it may not go at all, or null
     * @param limit the limit that made it wait or refused it (null when neither)
     */
    public record Admission(long waitNanos, String refusal, String limit) {
        public boolean refused() { return refusal != null; }
    }

    /** The proxy's one lock for every admission, so the reservations over two buckets (workspace and tenant) are consistent. */
    private final Object admissions;

    private final Usage workspace;
    private final Usage tenant;
    private final Shaping shaping;
    private final LongSupplier nanos;

    Quotas(Usage workspace, Usage tenant, Shaping shaping, LongSupplier nanos, Object admissions) {
        this.admissions = admissions;
        this.workspace = workspace;
        this.tenant = tenant;
        this.shaping = shaping;
        this.nanos = nanos;
    }

    /** Reserve an upstream slot of the workspace; false if it is at its limit. */
    public boolean tryOpen(int max) {
        while (true) {
            int n = workspace.openUpstreams.get();
            if (n >= max) return false;
            if (workspace.openUpstreams.compareAndSet(n, n + 1)) return true;
        }
    }

    public void closed() {
        workspace.openUpstreams.decrementAndGet();
    }

    /** Counts transferred bytes (heads and bodies); null while within the quotas, otherwise the exceeded one. */
    public String addBytes(long n) {
        long now = nanos.getAsLong();
        String over = workspace.bytes.take(n, now) < 0 ? exceeded(workspace) : null;
        if (tenant != null && tenant.bytes.take(n, now) < 0 && over == null) over = exceeded(tenant);
        return over;
    }

    private static String exceeded(Usage u) {
        return u.who + " exceeded its byte quota of " + u.maxBytes + " bytes (" + u.bytesKey + ")";
    }

    /**
     * Admission of a new request or CONNECT ({@code setup} false: only the byte quotas are consulted) or of a new
     * upstream connection ({@code setup} true: the connection rates as well, and a slot of each rate is taken).
     */
    public Admission admit(boolean setup) {
        synchronized (admissions) {
            long now = nanos.getAsLong();
            long wait = 0;
            Usage by = null;
            boolean rate = false;
            for (Usage u : tenant == null ? new Usage[] {workspace} : new Usage[] {workspace, tenant}) {
                long w = u.bytes.waitFor(1, now);
                if (w > wait) { wait = w; by = u; rate = false; }
                if (setup) {
                    w = u.connects.waitFor(1, now);
                    if (w > wait) { wait = w; by = u; rate = true; }
                }
            }
            long max = shaping.maxDelay().toNanos();
            if (by != null && wait > max) {
                return new Admission(0, rate ? rateRefusal(by, wait, max) : bytesRefusal(by, wait), rate ? by.rateKey : by.bytesKey);
            }
            if (setup) {
                workspace.connects.take(1, now);
                if (tenant != null) tenant.connects.take(1, now);
            }
            return new Admission(wait, null, by == null ? null : rate ? by.rateKey : by.bytesKey);
        }
    }

    private static String rateRefusal(Usage u, long wait, long max) {
        return u.who + " sets up connections faster than " + u.rate + " per second beyond a burst of " + u.burst + " (" + u.rateKey
                + "): the next one would wait " + wait / 1_000_000 + " ms, longer than maxShapingDelayMs (" + max / 1_000_000 + " ms)";
    }

    private static String bytesRefusal(Usage u, long wait) {
        return u.who + " used its byte quota of " + u.maxBytes + " bytes (" + u.bytesKey + ", heads and bodies, refilled over "
                + u.window.toSeconds() + " s: quotaWindowMs); egress resumes in " + Math.max(1, (wait + 999_999_999L) / 1_000_000_000L) + " s";
    }
}
