package dev.berth.proxy;

import java.nio.ByteBuffer;

/** Handle for one guest connection attached via {@link EgressProxy#attach}. Thread-safe; never blocks. */
public interface ProxyConnection {
    /**
     * Bytes from the guest client (copied before return). Returns false when the proxy has
     * buffered enough: stop reading from the guest until
     * {@link ClientSink#proxyWritabilityChanged(boolean) proxyWritabilityChanged(true)}.
     * Writes after close are dropped and return false.
     */
    boolean write(ByteBuffer fromClient);

    /**
     * Whether the proxy takes more now: false from a {@link #write} that returned false until just before
     * {@link ClientSink#proxyWritabilityChanged(boolean) proxyWritabilityChanged(true)}. A caller that records what it
     * held back after a refused write checks this afterwards, so that a change it raced with is not missed.
     */
    boolean writable();

    /** The guest half-closed its side (EOF). */
    void shutdownInput();

    /** Tear the connection down now (e.g. workspace closed); reason goes to the audit log. */
    void abort(String reason);

    /** Engine back-pressure: false pauses reading from the upstream until true again. */
    void clientWritable(boolean writable);

    /** Stable id used in audit records and decisions. */
    String id();
}
