package dev.berth.fleet;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * A compare-and-swap transaction on a {@link FleetStore}: if every comparison holds, the success ops run, else the
 * failure ops; all at one revision. This is how the fleet avoids lost updates without a lock: read, compute, then
 * write only if what was read is still the current revision. Immutable; build with {@link #when}.
 */
public record Txn(List<Compare> compares, List<Op> success, List<Op> failure) {

    public static Txn when(Compare... compares) {
        return new Txn(List.of(compares), List.of(), List.of());
    }

    public Txn then(Op... ops) {
        List<Op> s = new ArrayList<>(success);
        s.addAll(List.of(ops));
        return new Txn(compares, List.copyOf(s), failure);
    }

    public Txn orElse(Op... ops) {
        List<Op> f = new ArrayList<>(failure);
        f.addAll(List.of(ops));
        return new Txn(compares, success, List.copyOf(f));
    }

    /** A condition on one key. */
    public sealed interface Compare {
        String key();
    }

    /** The key does not exist. */
    public record Absent(String key) implements Compare {}

    /** The key was last written at exactly this revision (0: it does not exist). */
    public record ModRevision(String key, long revision) implements Compare {}

    /** The key is attached to exactly this lease. */
    public record Lease(String key, long lease) implements Compare {}

    /** One operation of a transaction. */
    public sealed interface Op {
        String key();
    }

    public record Put(String key, byte[] value, long lease) implements Op {
        public Put(String key, String value) { this(key, value.getBytes(StandardCharsets.UTF_8), 0); }
    }

    public record Delete(String key) implements Op {}

    public record Get(String key) implements Op {}
}
