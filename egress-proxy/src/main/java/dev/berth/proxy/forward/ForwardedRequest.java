package dev.berth.proxy.forward;

import dev.berth.proxy.http.RequestHead;
import dev.berth.proxy.net.HostNames;
import dev.berth.proxy.net.Targets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * The checks and the header rewrite of one forwarded request's head, before {@link HttpForwarder} asks for a decision:
 * which host the request really targets (URI and Host must agree) and which headers may travel upstream. Stateless.
 */
final class ForwardedRequest {
    private static final Set<String> HOP_BY_HOP = Set.of("connection", "keep-alive", "proxy-connection", "te", "trailer", "upgrade", "host");
    private static final Set<String> FRAMING = Set.of("content-length", "transfer-encoding");
    private static final Set<String> FORWARDING = Set.of("forwarded", "x-upstream-https-proxy", "x-real-ip", "via", "x-original-url",
            "x-rewrite-url");

    private ForwardedRequest() {}

    /**
     * Absolute-form http:// or https:// URI, and Host (if any) must equal its authority. For https:// (what busybox
     * wget and some other clients send a proxy instead of CONNECT) the proxy itself speaks TLS to the upstream,
     * verifying it as for an intercepted connection; the client's leg is the workspace's local proxy channel.
     */
    static Targets.Target absoluteTarget(RequestHead h) throws Targets.BadTarget {
        Targets.Target target = Targets.absolute(h.target);
        int defaultPort = Targets.isHttps(h.target) ? 443 : 80;
        List<String> hosts = h.all("Host");
        if (hosts.size() > 1) throw new Targets.BadTarget("multiple Host headers " + hosts);
        if (hosts.isEmpty() && h.version.equals("HTTP/1.1")) throw new Targets.BadTarget("HTTP/1.1 request without Host header");
        if (hosts.size() == 1) {
            Targets.Target ht = Targets.authority(hosts.get(0), defaultPort, "Host header");
            if (!TunnelStarter.sameHost(ht, target)) {
                throw new Targets.BadTarget("Host header '" + HostNames.printable(hosts.get(0)) + "' does not match request URI host '"
                        + TunnelStarter.canonicalOrRaw(target.host()) + "' port " + target.port());
            }
        }
        return target;
    }

    /** HTTPS mode: origin-form only, and Host must name the CONNECT host of {@code interception} (default port 443). */
    static Targets.Target interceptedTarget(RequestHead h, Interception interception) throws Targets.BadTarget {
        if (!h.target.startsWith("/")) {
            throw new Targets.BadTarget("request target '" + HostNames.printable(h.target) + "' inside an intercepted TLS connection to '"
                    + interception.authority() + "' must be origin-form (/path); absolute-form and authority-form are refused");
        }
        List<String> hosts = h.all("Host");
        if (hosts.size() > 1) throw new Targets.BadTarget("multiple Host headers " + hosts);
        if (hosts.isEmpty() && h.version.equals("HTTP/1.1")) throw new Targets.BadTarget("HTTP/1.1 request without Host header");
        Targets.Target connect = new Targets.Target(interception.host, interception.port, h.target);
        if (hosts.size() == 1) {
            Targets.Target ht = Targets.authority(hosts.get(0), 443, "Host header");
            if (!TunnelStarter.sameHost(ht, connect)) {
                throw new Targets.BadTarget("Host header '" + HostNames.printable(hosts.get(0))
                        + "' does not match the intercepted CONNECT host '" + interception.authority() + "'");
            }
        }
        return connect;
    }

    /**
     * The request's headers as they go upstream: framing kept, hop-by-hop, Proxy-*, Connection-listed and forwarding
     * metadata dropped.
     */
    static List<String[]> forwardedHeaders(RequestHead head) {
        Set<String> listed = new HashSet<>();
        for (String v : head.all("Connection")) {
            for (String t : v.split(",")) listed.add(t.trim().toLowerCase(Locale.ROOT));
        }
        List<String[]> out = new ArrayList<>();
        for (String[] h : head.headers) {
            String lower = h[0].toLowerCase(Locale.ROOT);
            if (FRAMING.contains(lower)) {
                out.add(h); // never strippable: the body bytes that follow depend on them
                continue;
            }
            if (HOP_BY_HOP.contains(lower) || lower.startsWith("proxy-") || listed.contains(lower)) continue;
            // Hop metadata the workspace could forge to steer an origin or the next proxy (client address, scheme,
            // an upstream proxy to use): the proxy is the only hop the origin should hear about, and it says nothing.
            if (FORWARDING.contains(lower) || lower.startsWith("x-forwarded-")) continue;
            out.add(h);
        }
        return out;
    }
}
