package dev.berth.mcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import tools.jackson.databind.JsonNode;

/** The MCP Inspector's CLI mode ({@code @modelcontextprotocol/inspector --cli}) lists and calls Berth's tools. */
class InspectorCliE2eTest {
    static final String INSPECTOR = "@modelcontextprotocol/inspector/clients/launcher/build/index.js";

    static JsonNode inspect(Path home, String... args) throws Exception {
        // the Inspector gives a server 15 s to answer initialize by default: a JVM starting on a loaded 2-core host can
        // take longer (seen in a suite run), so the bound is the test's own, as for every other client here
        List<String> a = new ArrayList<>(List.of("--cli", "--connect-timeout", "120000"));
        a.addAll(List.of(args));
        Node22.Result r = Node22.run(Node22.script(INSPECTOR, a.toArray(String[]::new)), home, 120);
        assertEquals(0, r.exit(), () -> "inspector failed:\n" + r.stdout() + r.stderr());
        return McpBridge.JSON.readTree(r.stdout());
    }

    static void assertBerthTools(JsonNode list) {
        Set<String> names = new HashSet<>();
        list.path("tools").forEach(t -> names.add(t.path("name").asString()));
        Set<String> catalog = new java.util.HashSet<>();
        dev.berth.schemas.ToolCatalog.load().tools().forEach(t -> catalog.add(t.name()));
        assertEquals(catalog, names, list.toString());
    }

    @Test
    void stdio_listsAndCallsTools(@TempDir Path dir) throws Exception {
        Node22.requireInstalled();
        Path node = Files.createDirectories(dir.resolve("node-home"));
        Path home = Files.createTempDirectory("berth-inspector-");
        try {
            String[] server = {McpBridge.javaBin(), "-jar", McpBridge.JAR.toString(), "stdio", "--home", home.toString()};
            List<String> list = new ArrayList<>(List.of(server));
            list.addAll(List.of("--method", "tools/list"));
            assertBerthTools(inspect(node, list.toArray(String[]::new)));
            List<String> call = new ArrayList<>(List.of(server));
            call.addAll(List.of("--method", "tools/call", "--tool-name", "list_workspaces"));
            JsonNode r = inspect(node, call.toArray(String[]::new));
            assertFalse(r.path("isError").asBoolean(), r.toString());
            SchemaCheck.assertValid("list_workspaces", r.path("structuredContent"));
        } finally {
            HomeLeaks.assertNone(home); // a leak is named here, before the delete
            dev.berth.engine.spi.Trees.delete(home);
        }
    }

    /** Streamable HTTP at /mcp and the legacy SSE transport at /sse, each with the bearer token as a header. */
    @ParameterizedTest
    @CsvSource({"/mcp,http", "/sse,sse"})
    void http_listsAndCallsTools_withBearerToken(String path, String transport, @TempDir Path dir) throws Exception {
        Node22.requireInstalled();
        Path node = Files.createDirectories(dir.resolve("node-home"));
        try (BerthHttp berth = BerthHttp.start(dir, """
                {"auth": {"tokens": [{"tenant": "inspector", "sha256": "%s"}]}, "tenants": {"inspector": {}}}
                """.formatted(BearerAuthenticatorTest.sha256("inspector-token")))) {
            String url = berth.url(path);
            assertBerthTools(inspect(node, url, "--transport", transport, "--header", "Authorization: Bearer inspector-token",
                    "--method", "tools/list"));
            JsonNode r = inspect(node, url, "--transport", transport, "--header", "Authorization: Bearer inspector-token",
                    "--method", "tools/call", "--tool-name", "list_workspaces");
            assertFalse(r.path("isError").asBoolean(), r.toString());
            SchemaCheck.assertValid("list_workspaces", r.path("structuredContent"));
        }
    }
}
