package dev.berth.engine;

import dev.berth.engine.api.EgressSettings;

import com.sun.net.httpserver.HttpServer;
import dev.berth.proxy.EgressProxy;
import dev.berth.proxy.policy.Policy;
import dev.berth.proxy.ProxyConfig;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import dev.berth.proxy.policy.SecretBinding;
import java.util.List;
import java.util.function.Function;

/**
 * Test fixture for egress from inside real workspaces: an HTTP upstream on this machine's loopback, and an egress
 * proxy whose test resolver maps every {@code *.test} name to loopback (allowed only with the proxy's unsafe
 * loopback setting, which production configs cannot turn on by accident).
 */
public final class EgressFixture {
    private EgressFixture() {}

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

    /** A started egress proxy whose ceiling is {@code entries}, resolving *.test names to loopback. */
    public static EgressSettings proxy(List<String> entries) {
        ProxyConfig cfg = ProxyConfig.builder().ceiling(Policy.of(entries)).unsafeAllowLoopbackUpstreams(true).build();
        return new EgressSettings(start(cfg, null), cfg.ceiling());
    }

    /**
     * A started egress proxy for secret bindings: ceiling {@code entries}, TLS (and interception) also on
     * {@code tlsPort}, upstream certificates checked against {@code trustedRoot} (the test's stand-in for the public
     * roots), {@code binding} configured, and its interception CA kept in {@code caDir}.
     */
    public static EgressSettings secretProxy(List<String> entries, int tlsPort, Path trustedRoot, SecretBinding binding, Path caDir) {
        return secretProxy(entries, tlsPort, trustedRoot, binding, caDir, dev.berth.proxy.audit.AuditSink.discard());
    }

    /** The same, with the proxy's audit records going to {@code audit} (an audit trail's egress sink). */
    public static EgressSettings secretProxy(List<String> entries, int tlsPort, Path trustedRoot, SecretBinding binding, Path caDir,
                                             dev.berth.proxy.audit.AuditSink audit) {
        ProxyConfig cfg = ProxyConfig.builder().ceiling(Policy.of(entries)).tlsPorts(java.util.Set.of(443, tlsPort))
                .unsafeAllowLoopbackUpstreams(true).upstreamTrustFiles(List.of(trustedRoot)).secret(binding).build();
        return new EgressSettings(start(cfg, caDir, audit), cfg.ceiling(), cfg.secrets());
    }

    /** A started egress proxy with one registry rule (intercepted, read-only), TLS also on {@code tlsPort}. */
    public static EgressSettings registryProxy(List<String> entries, int tlsPort, Path trustedRoot, dev.berth.proxy.policy.RegistryRule rule) {
        ProxyConfig cfg = ProxyConfig.builder().ceiling(Policy.of(entries)).tlsPorts(java.util.Set.of(443, tlsPort))
                .unsafeAllowLoopbackUpstreams(true).upstreamTrustFiles(List.of(trustedRoot)).registryRule(rule).build();
        return new EgressSettings(start(cfg, null), cfg.ceiling());
    }

    private static EgressProxy start(ProxyConfig cfg, Path caDir) {
        return start(cfg, caDir, dev.berth.proxy.audit.AuditSink.discard());
    }

    private static EgressProxy start(ProxyConfig cfg, Path caDir, dev.berth.proxy.audit.AuditSink audit) {
        EgressProxy.Builder b = EgressProxy.builder(cfg).auditSink(audit).resolver(host -> {
            if (host.endsWith(".test")) return List.of(InetAddress.getLoopbackAddress());
            throw new UnknownHostException(host);
        });
        if (caDir != null) b.caDirectory(caDir);
        return b.start();
    }
}
