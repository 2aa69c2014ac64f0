package dev.berth.mcp;

import dev.berth.engine.TestPki;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.TestInstance;
import tools.jackson.databind.JsonNode;

/**
 * What the real-client suites (git, npm, pip, Maven inside a workspace) share: a private folder with a
 * {@code localhost} certificate from the test CA, the real servers the suite starts on loopback (closed after it, last
 * started first), and {@code berth stdio} on the suite's isolation level under an operator config that allows only
 * that server's port and trusts the test CA for it. Each result a suite gets is schema-checked and kept.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class AbstractRealClientE2eTest {
    /** The isolation level (and image) the suite runs on. */
    abstract ToolsImage level();

    Path dir;
    TestPki.LocalhostFiles tls;
    McpBridge mcp;
    /** Every structured result of {@link #ok}, in order. */
    final List<String> results = new ArrayList<>();
    private final List<AutoCloseable> servers = new ArrayList<>();

    /** Creates the suite's folder ({@code berth-NAME-e2e-*}, closed to other users) and its TLS files. */
    void prepare(String name) throws Exception {
        dir = Files.createTempDirectory("berth-" + name + "-e2e-");
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx--x--x"));
        tls = TestPki.localhost(dir);
    }

    /** Registers a server the suite started, to be closed after it. */
    <T extends AutoCloseable> T serve(T server) {
        servers.add(server);
        return server;
    }

    /**
     * Writes the operator config and starts {@code berth stdio} with it: egress to {@code localhost} on 443 and
     * {@code port} (TLS checked there, the test CA trusted), loopback upstreams allowed (unsafe, tests only), a request
     * head allowed {@link #HEADER_TIMEOUT_MS}, plus
     * {@code moreEgress}: further members of the {@code egress} object, such as {@code "registryRules": {...}}.
     */
    /**
     * The proxy's limit on a request head, raised from the product's 10 s: these suites run real package managers
     * (a whole JVM, for Maven) inside a microVM emulated by TCG on two shared cores, where a TLS handshake and a request
     * head took longer than 10 s in a loaded fresh-clone run ("request head not completed within 10000 ms"). The
     * slowloris limit itself is tested by the proxy's own suite.
     */
    static final int HEADER_TIMEOUT_MS = 60_000;

    void startBerth(int port, String moreEgress) throws Exception {
        String config = """
                {"egress": {
                   "allow": [{"host": "localhost", "ports": [443, %1$d]}],
                   "tls": {"upstreamTrust": ["%2$s"], "ports": [443, %1$d]},
                   %3$s,
                   "unsafe": {"unsafeAllowLoopbackUpstreams": true},
                   "limits": {"header_timeout_ms": %4$d}}}
                """.formatted(port, tls.root(), moreEgress, HEADER_TIMEOUT_MS);
        Path cfg = dir.resolve("berth.json");
        Files.writeString(cfg, config);
        Path home = Files.createDirectories(dir.resolve("home"));
        level().prepare(home);
        mcp = McpBridge.stdio(home, level().args("--config", cfg.toString()));
        mcp.connect();
    }

    @AfterAll
    void stop() throws Exception {
        try {
            if (mcp != null) mcp.close();
            // before the delete: a leak is named here, not reported as "Device or resource busy"
            if (dir != null) HomeLeaks.assertNone(dir.resolve("home"));
        } finally {
            for (AutoCloseable s : servers.reversed()) s.close();
        }
        if (dir != null) dev.berth.engine.spi.Trees.delete(dir);
    }

    JsonNode ok(String tool, Map<String, Object> args) throws IOException {
        JsonNode sc = mcp.ok(tool, args);
        SchemaCheck.assertValid(tool, sc);
        results.add(sc.toString());
        return sc;
    }
}
