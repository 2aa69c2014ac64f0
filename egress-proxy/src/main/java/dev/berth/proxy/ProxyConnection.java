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

    /** The guest half-closed its side (EOF). */
    void shutdownInput();

    /** Tear the connection down now (e.g. workspace closed); reason goes to the audit log. */
    void abort(String reason);

    /** Engine back-pressure: false pauses reading from the upstream until true again. */
    void clientWritable(boolean writable);

    /** Stable id used in audit records and decisions. */
    String id();
}
