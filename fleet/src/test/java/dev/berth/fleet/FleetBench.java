package dev.berth.fleet;

import java.time.Clock;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Prints what the fleet costs etcd (not a test: run with {@code mvn -o -pl fleet -Dtest=FleetBench
 * -Dsurefire.failIfNoSpecifiedTests=false verify}, figures in docs/benchmarks.md): store operations and request
 * bytes per fleet open and close (TenantLedger reserve/release, uncontended), and their latency p50/p99 on the real
 * 3-member cluster on loopback; and the time of one placement over 10 and 100 simulated registrations.
 */
@ExtendWith(EtcdCluster.Shared.class)
class FleetBench {
    /** Counts calls and the bytes of keys and values sent, around a real store. */
    static final class Counting implements FleetStore {
        final FleetStore in;
        final AtomicLong ops = new AtomicLong();
        final AtomicLong bytes = new AtomicLong();

        Counting(FleetStore in) { this.in = in; }

        private void op(String key, byte[] value) {
            ops.incrementAndGet();
            bytes.addAndGet(key.length() + (value == null ? 0 : value.length));
        }

        public Optional<KeyValue> get(String key) { op(key, null); return in.get(key); }
        public List<KeyValue> range(String prefix) { op(prefix, null); return in.range(prefix); }
        public long put(String key, byte[] value, long lease) { op(key, value); return in.put(key, value, lease); }
        public boolean delete(String key) { op(key, null); return in.delete(key); }
        public TxnResult txn(Txn txn) {
            ops.incrementAndGet();
            for (var c : txn.compares()) bytes.addAndGet(c.key().length() + 8);
            for (var o : txn.success()) bytes.addAndGet(o.key().length() + (o instanceof Txn.Put p ? p.value().length : 0));
            for (var o : txn.failure()) bytes.addAndGet(o.key().length() + (o instanceof Txn.Put p ? p.value().length : 0));
            return in.txn(txn);
        }
        public long grantLease(long ttl) { op("", null); return in.grantLease(ttl); }
        public long keepAlive(long lease) { op("", null); return in.keepAlive(lease); }
        public void revoke(long lease) { op("", null); in.revoke(lease); }
        public AutoCloseable watch(String p, long r, Consumer<List<Event>> l, Consumer<Exception> e) { return in.watch(p, r, l, e); }
        public String describe() { return in.describe(); }
        public void close() { in.close(); }
    }

    @Test
    void openClose_opsBytesLatency(EtcdCluster etcd) {
        int n = Integer.getInteger("berth.bench.n", 300);
        try (var real = etcd.store()) {
            var store = new Counting(real);
            var keys = new FleetKeys(EtcdCluster.prefix("bench"));
            var ledger = new TenantLedger(store, keys, Clock.systemUTC());
            var limit = new TenantLedger.Usage(1000, 1000, 1 << 20, 1L << 30);
            for (int i = 0; i < 30; i++) ledger.release(ledger.reserve("t", "ws-warm" + i, "w" + i, "n1", "namespace", 1, 512, 4096, limit).id());
            long[] open = new long[n];
            long[] close = new long[n];
            store.ops.set(0);
            store.bytes.set(0);
            for (int i = 0; i < n; i++) {
                long t0 = System.nanoTime();
                ledger.reserve("t", "ws-" + Integer.toHexString(0x100000 + i), "name-" + i, "n1", "namespace", 1, 512, 4096, limit);
                open[i] = System.nanoTime() - t0;
            }
            long openOps = store.ops.getAndSet(0);
            long openBytes = store.bytes.getAndSet(0);
            for (int i = 0; i < n; i++) {
                long t0 = System.nanoTime();
                ledger.release("ws-" + Integer.toHexString(0x100000 + i));
                close[i] = System.nanoTime() - t0;
            }
            long closeOps = store.ops.get();
            long closeBytes = store.bytes.get();
            System.out.printf("[fleet-bench] %d opens: %.1f store ops and %.0f request bytes (keys+values) per open; p50 %.2f ms p99 %.2f ms%n",
                    n, openOps / (double) n, openBytes / (double) n, pct(open, 50), pct(open, 99));
            System.out.printf("[fleet-bench] %d closes: %.1f store ops and %.0f request bytes per close; p50 %.2f ms p99 %.2f ms%n",
                    n, closeOps / (double) n, closeBytes / (double) n, pct(close, 50), pct(close, 99));
        }
    }

    /** Placement time at 10 and 100 simulated registrations (docs/benchmarks.md): printed, not asserted. */
    @Test
    void placementTime_10and100Nodes() {
        for (int size : new int[] {10, 100}) {
            List<NodeOffer> nodes = new java.util.ArrayList<>();
            for (int i = 0; i < size; i++) nodes.add(PlacementTest.node("n" + i, List.of("namespace"), 1000 + (i * 37L) % 5000, 4, i % 7, 0, Map.of("zone", "z" + i % 3), false));
            for (int i = 0; i < 2000; i++) Placement.choose(nodes, PlacementTest.NS); // warm-up
            int rounds = 20000;
            long t0 = System.nanoTime();
            for (int i = 0; i < rounds; i++) Placement.choose(nodes, PlacementTest.NS);
            System.out.printf("[placement] %d nodes: %.1f us per placement%n", size, (System.nanoTime() - t0) / 1e3 / rounds);
        }
    }

    static double pct(long[] ns, int p) {
        long[] s = Arrays.copyOf(ns, ns.length);
        Arrays.sort(s);
        return s[Math.min(s.length - 1, (int) Math.ceil(p / 100.0 * s.length) - 1)] / 1e6;
    }
}
