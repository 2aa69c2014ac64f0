package dev.berth.mcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpsServer;
import dev.berth.engine.TestPki;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import tools.jackson.databind.JsonNode;

/**
 * Secret bindings through the whole product: the official TypeScript MCP client drives {@code berth.jar stdio} with an
 * operator config that binds a secret (read from a 0600 file) to a host; curl inside a real workspace calls a real
 * HTTPS server on this machine's loopback with the placeholder it was given, and the server receives the real value.
 * Results are validated against the tools' output schemas.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class SecretsE2eTest {
    static final String REAL = "glpat-REAL-e2e-secret-0123456789";
    /** localhost resolves to loopback everywhere, which this test's config (and only it) lets workspaces reach. */
    static final String CURL = "env -u NO_PROXY -u no_proxy curl -sS --max-time 20 ";

    Path dir;
    HttpsServer upstream;
    int port;
    McpBridge mcp;

    @BeforeAll
    void start() throws Exception {
        dir = Files.createTempDirectory("berth-secrets-e2e-");
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx--x--x"));
        TestPki pki = TestPki.create();
        upstream = pki.https(ex -> ex.getRequestURI().getPath() + " " + TestPki.describeAuth(ex, REAL), "localhost");
        port = upstream.getAddress().getPort();
        Path root = pki.writeCaPem(dir.resolve("test-root.pem"));
        Path secret = dir.resolve("gitlab-token");
        Files.writeString(secret, REAL + "\n");
        Files.setPosixFilePermissions(secret, PosixFilePermissions.fromString("rw-------"));
        String config = """
                {"egress": {
                   "allow": [{"host": "localhost", "ports": [443, %d]}],
                   "tls": {"upstreamTrust": ["%s"], "ports": [443, %d]},
                   "secrets": {"gitlab": {"env": "GITLAB_TOKEN", "hosts": ["localhost"], "headers": ["PRIVATE-TOKEN", "Authorization"], "fromFile": "%s"}},
                   "unsafe": {"unsafeAllowLoopbackUpstreams": true}}}
                """.formatted(port, root, port, secret);
        Path cfg = dir.resolve("berth.json");
        Files.writeString(cfg, config);
        Path home = Files.createDirectories(dir.resolve("home"));
        mcp = McpBridge.stdio(home, "--isolation", "namespace", "--config", cfg.toString());
        mcp.connect();
    }

    @AfterAll
    void stop() throws IOException {
        if (mcp != null) mcp.close();
        if (upstream != null) upstream.stop(0);
        HomeLeaks.assertNone(dir); // a leak is named here, before the delete
        dev.berth.engine.spi.Trees.delete(dir);
    }

    JsonNode ok(String tool, Map<String, Object> args) throws IOException {
        JsonNode sc = mcp.ok(tool, args);
        SchemaCheck.assertValid(tool, sc);
        return sc;
    }

    @Test
    void runGetsAPlaceholder_theProxyInjectsTheSecret_andRevokesItAfterwards() throws IOException {
        JsonNode ws = ok("open_workspace", Map.of("secrets", List.of("gitlab")));
        assertEquals(List.of("gitlab"), McpBridge.JSON.convertValue(ws.path("secrets"), List.class));
        String id = ws.path("workspace").asString();

        JsonNode r = ok("run", Map.of("workspace", id, "command", "printf %s \"$GITLAB_TOKEN\" > /workspace/kept; "
                + CURL + "-H \"PRIVATE-TOKEN: $GITLAB_TOKEN\" -H \"Authorization: Bearer $GITLAB_TOKEN\" https://localhost:" + port + "/api/v4/user"));
        assertEquals("/api/v4/user auth=bearer-real", r.path("stdout").asString(), r.toString());
        assertEquals("gitlab", r.path("secrets_used").get(0).path("secret").asString(), r.toString());
        assertEquals("localhost", r.path("secrets_used").get(0).path("host").asString());
        assertFalse(r.toString().contains(REAL));

        JsonNode kept = ok("read_file", Map.of("workspace", id, "path", "kept"));
        assertTrue(kept.toString().contains("berth-secret-gitlab-"), kept.toString());
        assertFalse(kept.toString().contains(REAL));

        JsonNode later = ok("run", Map.of("workspace", id, "secrets", List.of(), "command",
                CURL + "-o /dev/null -w '%{http_code}' -H \"Authorization: Bearer $(cat /workspace/kept)\" https://localhost:" + port + "/again"));
        assertEquals("403", later.path("stdout").asString(), later.toString());
        assertTrue(later.path("egress_denied").get(0).path("reason").asString().contains("revoked"), later.toString());
    }

    @Test
    void unknownSecret_isAClearToolError() throws IOException {
        JsonNode r = mcp.call("open_workspace", Map.of("secrets", List.of("aws")));
        assertTrue(r.path("isError").asBoolean(), r.toString());
        String text = r.path("content").get(0).path("text").asString();
        assertTrue(text.contains("no secret binding 'aws' is available to you; available: gitlab"), text);
    }
}
