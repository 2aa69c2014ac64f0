package dev.berth.fleet;

import java.util.List;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * The fleet's shared state: a linearizable key-value store with revision-checked transactions, leases and watches.
 * etcd is the one implementation today ({@link EtcdStore}); the interface is what a Kubernetes-API store would
 * implement later (docs/fleet.md, "The Kubernetes path"). Keys are UTF-8 strings under one prefix; values are bytes.
 *
 * <p>Every call may throw {@link FleetStoreException} when the store cannot be reached or refuses (no quorum, an
 * unknown lease); the message names the endpoint. Implementations are thread-safe.
 */
public interface FleetStore extends AutoCloseable {

    /** The key's current value, or empty. */
    Optional<KeyValue> get(String key);

    /** Every key that starts with {@code prefix}, in key order. */
    List<KeyValue> range(String prefix);

    /** Writes a value, attached to {@code lease} (0 = none: the key outlives every lease); returns the new revision. */
    long put(String key, byte[] value, long lease);

    /** Deletes a key; returns whether it existed. */
    boolean delete(String key);

    /** Runs the comparisons and, all holding, the success ops, else the failure ops; atomically. */
    TxnResult txn(Txn txn);

    /** A lease that expires after {@code ttlSeconds} unless kept alive; returns its id. */
    long grantLease(long ttlSeconds);

    /** Renews a lease; returns the seconds it now has, or 0 when it no longer exists (expired or revoked). */
    long keepAlive(long lease);

    /** Ends a lease now, deleting every key attached to it. */
    void revoke(long lease);

    /**
     * Calls {@code listener} with every change under {@code prefix} after revision {@code afterRevision}, on a thread
     * of the store's, until the returned handle is closed or the store fails (then {@code onError} once).
     */
    AutoCloseable watch(String prefix, long afterRevision, Consumer<List<Event>> listener, Consumer<Exception> onError);

    /** Where this store is (the endpoints), for messages. */
    String describe();

    @Override
    void close();

    /** One key's state. {@code createRevision} 0 never occurs here: an absent key has no KeyValue. */
    record KeyValue(String key, byte[] value, long createRevision, long modRevision, long version, long lease) {
        public String text() { return new String(value, java.nio.charset.StandardCharsets.UTF_8); }
    }

    /** A change seen by a watch; {@code kv.value()} is empty for a delete. */
    record Event(boolean deleted, KeyValue kv) {}

    /** The outcome of a transaction: whether the comparisons held, and the values read by its get ops. */
    record TxnResult(boolean succeeded, long revision, List<Optional<KeyValue>> gets) {}
}
