package dev.berth.engine.contract;

import com.sun.net.httpserver.HttpServer;
import dev.berth.engine.EgressSettings;
import dev.berth.proxy.audit.AuditSink;
import dev.berth.proxy.EgressProxy;
import dev.berth.proxy.policy.Policy;
import dev.berth.proxy.ProxyConfig;
import dev.berth.proxy.policy.SecretBinding;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.function.Function;

/**
 * Egress fixtures for the contract suites: a plain HTTP upstream on loopback, and egress proxies whose test resolver
 * maps every {@code *.test} name to loopback (allowed only with the proxy's unsafe loopback setting, which production
 * configs cannot turn on by accident). Stateless; the caller stops what it started.
 */
public final class TestProxy {
    private TestProxy() {}

    /** A started loopback HTTP server answering every request with {@code body.apply(path)}. */
    public static HttpServer upstream(Function<String, String> body) throws IOException {
        HttpServer s = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 16);
        s.createContext("/", ex -> {
            byte[] b = body.apply(ex.getRequestURI().toString()).getBytes(StandardCharsets.UTF_8);
            ex.sendResponseHeaders(200, b.length);
            ex.getResponseBody().write(b);
            ex.close();
        });
        s.start();
        return s;
    }

    /** A started egress proxy whose ceiling is {@code entries}. */
    public static EgressSettings plain(List<String> entries) {
        ProxyConfig cfg = ProxyConfig.builder().ceiling(Policy.of(entries)).unsafeAllowLoopbackUpstreams(true).build();
        return new EgressSettings(start(cfg, null), cfg.ceiling());
    }

    /**
     * A started egress proxy for secret bindings: ceiling {@code entries}, TLS (and interception) also on
     * {@code tlsPort}, upstream certificates checked against {@code trustedRoot} (the test's stand-in for the public
     * roots), {@code binding} configured, and its interception CA kept in {@code caDir}.
     */
    public static EgressSettings secrets(List<String> entries, int tlsPort, Path trustedRoot, SecretBinding binding, Path caDir) {
        ProxyConfig cfg = ProxyConfig.builder().ceiling(Policy.of(entries)).tlsPorts(Set.of(443, tlsPort))
                .unsafeAllowLoopbackUpstreams(true).upstreamTrustFiles(List.of(trustedRoot)).secret(binding).build();
        return new EgressSettings(start(cfg, caDir), cfg.ceiling(), cfg.secrets());
    }

    private static EgressProxy start(ProxyConfig cfg, Path caDir) {
        EgressProxy.Builder b = EgressProxy.builder(cfg).auditSink(AuditSink.discard()).resolver(host -> {
            if (host.endsWith(".test")) return List.of(InetAddress.getLoopbackAddress());
            throw new UnknownHostException(host);
        });
        if (caDir != null) b.caDirectory(caDir);
        return b.start();
    }
}
