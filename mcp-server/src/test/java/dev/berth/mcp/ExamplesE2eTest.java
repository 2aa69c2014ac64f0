package dev.berth.mcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/** Every example in examples/ is exercised, so none can rot. */
class ExamplesE2eTest {
    static final Path EXAMPLES = McpBridge.NODE_DIR.resolve("../../../../examples").normalize();

    @Test
    void agentSession_runsToTheEnd() throws Exception {
        Path home = Files.createTempDirectory("berth-example-");
        try {
            Process p = new ProcessBuilder("node", "agent-session.mjs", McpBridge.JAR.toString(), "--home", home.toString())
                    .directory(EXAMPLES.toFile()).redirectErrorStream(true).start();
            p.getOutputStream().close();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertTrue(p.waitFor(180, TimeUnit.SECONDS));
            assertEquals(0, p.exitValue(), out);
            assertTrue(out.contains("forked from snapshot 'before-refactor-") && out.strip().endsWith("done"), out);
        } finally {
            HomeLeaks.assertNone(home); // a leak is named here, before the delete
            dev.berth.engine.spi.Trees.delete(home);
        }
    }

    @Test
    void templateWalkthrough_forksThreeAndRunsEachSubset() throws Exception {
        Path home = Files.createTempDirectory("berth-template-example-");
        try {
            Process p = new ProcessBuilder("node", "template-walkthrough.mjs", McpBridge.JAR.toString(), "--home", home.toString(),
                    "--isolation", "namespace").directory(EXAMPLES.toFile()).redirectErrorStream(true).start();
            p.getOutputStream().close();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertTrue(p.waitFor(180, TimeUnit.SECONDS));
            assertEquals(0, p.exitValue(), out);
            for (String suite : List.of("unit: ok", "integration: ok", "lint: ok")) assertTrue(out.contains(suite), out);
            assertTrue(out.strip().endsWith("done"), out);
        } finally {
            HomeLeaks.assertNone(home); // a leak is named here, before the delete
            dev.berth.engine.spi.Trees.delete(home);
        }
    }

    @Test
    void egressPolicyExample_isTheWorkspaceCeiling() throws Exception {
        Path home = Files.createTempDirectory("berth-egress-example-");
        try (McpBridge mcp = McpBridge.stdio(home, "--egress", EXAMPLES.resolve("egress-policy.json").toString())) {
            mcp.connect();
            JsonNode open = mcp.call("open_workspace", java.util.Map.of()).path("structuredContent");
            List<String> policy = new ArrayList<>();
            open.path("egress_policy").forEach(p -> policy.add(p.asString()));
            assertTrue(policy.contains("registry.npmjs.org:[443]") && policy.contains("deb.debian.org:[80, 443]")
                    && policy.contains("raw.githubusercontent.com:[443]"), policy.toString());
            // no attacker-ownable wildcard in the shipped example (issue 16, finding 6)
            assertTrue(policy.stream().noneMatch(p -> p.startsWith("*.githubusercontent.com")), policy.toString());
            JsonNode narrowed = mcp.call("open_workspace", java.util.Map.of("egress", List.of("preset:npm", "evil.example")))
                    .path("structuredContent");
            List<String> n = new ArrayList<>();
            narrowed.path("egress_policy").forEach(p -> n.add(p.asString()));
            assertTrue(n.contains("registry.npmjs.org:[443]") && n.stream().noneMatch(x -> x.contains("evil")), n.toString());
        } finally {
            HomeLeaks.assertNone(home); // a leak is named here, before the delete
            dev.berth.engine.spi.Trees.delete(home);
        }
    }

    /**
     * The client configs say `berth stdio`; with the launcher installed (`berth launcher --bin-dir`) and on PATH, the
     * real client starts them exactly as configured and they answer.
     */
    @ParameterizedTest
    @ValueSource(strings = {"claude-code.mcp.json", "claude-desktop.json"})
    void clientConfig_startsAWorkingServer(String file) throws Exception {
        JsonNode server = McpBridge.JSON.readTree(Files.readString(EXAMPLES.resolve(file))).path("mcpServers").path("berth");
        List<String> command = new ArrayList<>(List.of(server.path("command").asString()));
        server.path("args").forEach(a -> command.add(a.asString()));
        assertEquals(List.of("berth", "stdio"), command, server.toString());
        Path dir = Files.createTempDirectory("berth-config-");
        try {
            Path bin = dir.resolve("bin");
            Process install = new ProcessBuilder(McpBridge.javaBin(), "-jar", McpBridge.JAR.toString(), "launcher", "--bin-dir", bin.toString())
                    .redirectErrorStream(true).start();
            String out = new String(install.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertTrue(install.waitFor(60, TimeUnit.SECONDS) && install.exitValue() == 0, out);
            command.addAll(List.of("--home", dir.resolve("home").toString()));
            try (McpBridge mcp = McpBridge.stdioCommand(command, java.util.Map.of("PATH", bin + ":" + System.getenv("PATH")))) {
                JsonNode hello = mcp.connect();
                assertEquals("berth", hello.path("serverInfo").path("name").asString());
            }
        } finally {
            HomeLeaks.assertNone(dir); // a leak is named here, before the delete
            dev.berth.engine.spi.Trees.delete(dir);
        }
    }

    /**
     * examples/berth-http.json (the operator config, token hash filled in) serves berth http, and the Claude Code
     * HTTP config reaches it as written: its URL (port swapped for a free one) and its Authorization header with
     * ${BERTH_TOKEN} expanded the way Claude Code expands it.
     */
    @Test
    void claudeCodeHttpConfig_reachesBerthHttpStartedWithTheExampleOperatorConfig() throws Exception {
        String token = "example-" + System.nanoTime();
        tools.jackson.databind.node.ObjectNode operator = (tools.jackson.databind.node.ObjectNode)
                McpBridge.JSON.readTree(Files.readString(EXAMPLES.resolve("berth-http.json")));
        JsonNode tok = operator.path("auth").path("tokens").get(0);
        assertTrue(tok.path("sha256").asString().startsWith("REPLACE"), "the example must not ship a usable token hash: " + tok);
        ((tools.jackson.databind.node.ObjectNode) tok).put("sha256", BearerAuthenticatorTest.sha256(token));

        JsonNode server = McpBridge.JSON.readTree(Files.readString(EXAMPLES.resolve("claude-code-http.mcp.json"))).path("mcpServers").path("berth");
        assertEquals("http", server.path("type").asString());
        assertEquals("http://127.0.0.1:8080/mcp", server.path("url").asString());
        String header = server.path("headers").path("Authorization").asString();
        assertEquals("Bearer ${BERTH_TOKEN}", header);
        Path dir = Files.createTempDirectory("berth-example-http-");
        String realSecret = "ghp_example_" + System.nanoTime();
        try (BerthHttp berth = BerthHttp.start(dir, McpBridge.JSON.writeValueAsString(operator),
                java.util.Map.of("BERTH_SECRET_GITHUB", realSecret))) {
            String url = server.path("url").asString().replace(":8080/", ":" + berth.port + "/");
            String expanded = header.replace("${BERTH_TOKEN}", token);
            try (McpBridge mcp = McpBridge.http(url, expanded.substring("Bearer ".length()))) {
                JsonNode hello = mcp.connect();
                assertEquals("berth", hello.path("serverInfo").path("name").asString());
                JsonNode list = mcp.call("list_workspaces", java.util.Map.of());
                assertFalse(list.path("isError").asBoolean(), list.toString());
                // the example's egress ceiling and guard mode are in force
                JsonNode ws = mcp.call("open_workspace", java.util.Map.of()).path("structuredContent");
                assertTrue(ws.path("egress_policy").toString().contains("registry.npmjs.org:[443]"), ws.toString());
                JsonNode run = mcp.call("run", java.util.Map.of("workspace", ws.path("workspace").asString(),
                        "command", "echo '{}' > .mcp.json")).path("structuredContent");
                assertTrue(run.path("agent_config_changes").get(0).path("reverted").asBoolean(), run.toString());
                // the example's secret binding: the tenant may use it, and a run sees only a placeholder for it
                JsonNode withSecret = mcp.call("open_workspace", java.util.Map.of("secrets", java.util.List.of("github")))
                        .path("structuredContent");
                assertEquals("[\"github\"]", withSecret.path("secrets").toString(), withSecret.toString());
                JsonNode env = mcp.call("run", java.util.Map.of("workspace", withSecret.path("workspace").asString(), "command",
                        "printf '%s %s ' \"$GITHUB_TOKEN\" \"$SSL_CERT_FILE\"; cat /proc/[0-9]*/environ | tr '\\0' '\\n' | grep -c "
                                + realSecret + "; true")).path("structuredContent");
                assertTrue(env.path("stdout").asString().matches("berth-secret-github-[0-9a-f]{32} /var/lib/berth/ca-certificates.crt 0\n"),
                        env.toString());
            }
        } finally {
            HomeLeaks.assertNone(dir); // a leak is named here, before the delete
            dev.berth.engine.spi.Trees.delete(dir);
        }
    }
}
