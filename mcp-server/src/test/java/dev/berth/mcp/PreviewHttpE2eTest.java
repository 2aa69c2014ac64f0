package dev.berth.mcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import tools.jackson.databind.JsonNode;

/**
 * expose_port over `berth http` (two tenants, static bearer tokens; previews on the MCP port) with python's http.server in alice's
 * workspace: alice's token (header, or once in the URL for a cookie) opens her preview; bob's token gets the same 404
 * as a preview that does not exist; no token gets 401; bob cannot expose alice's workspace.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class PreviewHttpE2eTest {
    private Path dir;
    private BerthHttp server;
    private McpBridge alice;
    private McpBridge bob;

    @BeforeAll
    void start() throws Exception {
        dir = Files.createTempDirectory("berth-preview-http-");
        server = BerthHttp.start(dir, """
                {"auth": {"tokens": [{"tenant": "alice", "sha256": "%s"}, {"tenant": "bob", "sha256": "%s"}]},
                 "tenants": {"alice": {}, "bob": {}},
                 "http": {"previews": {"host_header": "preserve"}}}
                """.formatted(BearerAuthenticatorTest.sha256("alice-token"), BearerAuthenticatorTest.sha256("bob-token")));
        alice = McpBridge.http(server.url("/mcp"), "alice-token");
        alice.connect();
        bob = McpBridge.http(server.url("/mcp"), "bob-token");
        bob.connect();
    }

    @AfterAll
    void stop() throws Exception {
        if (alice != null) alice.close();
        if (bob != null) bob.close();
        if (server != null) server.close();
        HomeLeaks.assertNone(dir); // a leak is named here, before the delete
        dev.berth.engine.spi.Trees.delete(dir);
    }

    private static JsonNode ok(McpBridge b, String tool, Map<String, Object> args) throws Exception {
        return SchemaCheck.ok(b, tool, args);
    }

    private static String[] curl(String... args) throws Exception {
        return Curl.call(args);
    }

    @Test
    void tenantPreview_ownTokenOpensIt_otherTenantSees404_noTokenSees401() throws Exception {
        String ws = ok(alice, "open_workspace", Map.of("name", "site")).path("workspace").asString();
        ok(alice, "write_file", Map.of("workspace", ws, "path", "/workspace/site/index.html", "content", "alice's page\n"));
        ok(alice, "run", Map.of("workspace", ws, "background", true, "timeout_s", 3600,
                "command", "cd /workspace/site && exec python3 -m http.server 8000 --bind 127.0.0.1"));
        ok(alice, "run", Map.of("workspace", ws, "timeout_s", 60, "command", "python3 -c 'import socket, time\nwhile True:\n"
                + "    try:\n        socket.create_connection((\"127.0.0.1\", 8000)).close(); break\n    except OSError:\n        time.sleep(0.05)'"));
        JsonNode e = ok(alice, "expose_port", Map.of("workspace", ws, "port", 8000));
        String url = e.path("url").asString();
        // on the MCP server's own port: <public_url>/p/<id>/
        assertTrue(url.startsWith(server.url("/p/")) && !url.contains("berth_token"), url);

        String[] own = curl("-H", "Authorization: Bearer alice-token", url);
        assertEquals("200", own[1], own[0]);
        assertEquals("alice's page\n", own[0]);
        String[] other = curl("-H", "Authorization: Bearer bob-token", url);
        assertEquals("404", other[1], other[0]);
        assertEquals("no such preview (never exposed, unexposed, or its workspace closed)\n", other[0]);
        String[] none = curl(url);
        assertEquals("401", none[1], none[0]);

        Path jar = dir.resolve("cookies.txt");
        assertEquals("303", curl("-c", jar.toString(), url + "?berth_token=alice-token")[1]);
        String[] cookie = curl("-b", jar.toString(), url);
        assertEquals("alice's page\n", cookie[0], cookie[1]);

        // host_header "preserve": the app sees the Host and Origin the browser sent, and X-Forwarded-*
        String app = new String(PreviewHttpE2eTest.class.getResourceAsStream("/preview/redirect_app.py").readAllBytes(), StandardCharsets.UTF_8);
        ok(alice, "write_file", Map.of("workspace", ws, "path", "/workspace/app.py", "content", app));
        ok(alice, "run", Map.of("workspace", ws, "background", true, "timeout_s", 3600, "command", "exec python3 /workspace/app.py 8002"));
        ok(alice, "run", Map.of("workspace", ws, "timeout_s", 60, "command", "python3 -c 'import socket, time\nwhile True:\n"
                + "    try:\n        socket.create_connection((\"127.0.0.1\", 8002)).close(); break\n    except OSError:\n        time.sleep(0.05)'"));
        String echoUrl = ok(alice, "expose_port", Map.of("workspace", ws, "port", 8002)).path("url").asString() + "echo";
        JsonNode echo = tools.jackson.databind.json.JsonMapper.builder().build().readTree(
                curl("-H", "Authorization: Bearer alice-token", "-H", "Origin: " + server.url(""), echoUrl)[0]);
        assertEquals("127.0.0.1:" + server.port, echo.path("host").asString(), echo.toString());
        assertEquals(server.url(""), echo.path("origin").asString(), echo.toString());
        assertEquals("127.0.0.1:" + server.port, echo.path("x_forwarded_host").asString(), echo.toString());
        assertEquals("http", echo.path("x_forwarded_proto").asString(), echo.toString());

        JsonNode refused = bob.call("expose_port", Map.of("workspace", ws, "port", 8000));
        assertTrue(refused.path("isError").asBoolean(), refused.toString());
        assertTrue(refused.path("content").get(0).path("text").asString().contains("no workspace"), refused.toString());
    }
}
