package dev.berth.proxy.net;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.Arrays;
import java.util.List;

/**
 * Name resolution, pluggable so tests can map names to loopback. Calls may block; the proxy
 * runs them off the event loop with a timeout. Every returned address is classified afterwards,
 * so a resolver cannot grant access to a non-public address (loopback additionally needs
 * {@link ProxyConfig#unsafeAllowLoopbackUpstreams()}).
 */
@FunctionalInterface
public interface Resolver {
    List<InetAddress> resolve(String canonicalHost) throws UnknownHostException;

    /** The JVM/system resolver. The host passed is never an IP literal. */
    static Resolver system() {
        return host -> Arrays.asList(InetAddress.getAllByName(host));
    }
}
