package dev.berth.proxy;

import java.nio.ByteBuffer;

/**
 * The engine's side of an attached connection: where the proxy sends bytes for the guest.
 * Called on a proxy event-loop thread; must not block.
 */
public interface ClientSink {
    /** Bytes for the guest client. The buffer is only valid during the call: copy or consume it. */
    void write(ByteBuffer toClient);

    /** The proxy will send nothing more (TCP FIN towards the guest). May still accept input. */
    void shutdownOutput();

    /** The connection was aborted (denial after tunnel start, timeout, quota...); reason is for logs. */
    void reset(String reason);

    /**
     * Back-pressure for {@link ProxyConnection#write}: false means stop reading from the guest,
     * true means resume. Default ignores it (the proxy still works, just buffers more).
     */
    default void proxyWritabilityChanged(boolean writable) {}

    /** The connection is fully closed; called exactly once, after shutdownOutput or reset. */
    default void closed() {}
}
