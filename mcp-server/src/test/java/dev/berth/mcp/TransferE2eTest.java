package dev.berth.mcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/**
 * A directory in and the work out (issue 29) through the official TypeScript client over stdio: the client's
 * declared roots (roots/list) or the operator's project_roots decide what may be imported; results pass the tools'
 * output schemas (the client validates them); the many-agents example imports once, forks three and gets three
 * branches, with the user's working tree, index and current branch unchanged.
 */
class TransferE2eTest {
    Path home;
    Path root;
    Path repo;

    @BeforeEach
    void setUp() throws Exception {
        home = Files.createTempDirectory("berth-transfer-e2e-");
        root = Files.createTempDirectory("berth-transfer-root-").toRealPath();
        repo = Files.createDirectory(root.resolve("proj"));
        git(repo, "init", "-q");
        Files.writeString(repo.resolve("README.md"), "hello\n");
        Files.writeString(repo.resolve(".gitignore"), ".env\n");
        git(repo, "add", "-A");
        git(repo, "commit", "-q", "-m", "first");
        Files.writeString(repo.resolve("README.md"), "hello, uncommitted\n");
        Files.writeString(repo.resolve(".env"), "SECRET=1\n");
    }

    @AfterEach
    void tearDown() throws Exception {
        try {
            HomeLeaks.assertNone(home);
        } finally {
            dev.berth.engine.spi.Trees.delete(home);
            dev.berth.engine.spi.Trees.delete(root);
        }
    }

    static String git(Path dir, String... args) throws IOException, InterruptedException {
        List<String> c = new ArrayList<>(List.of("git", "-C", dir.toString(), "-c", "user.name=T", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"));
        c.addAll(List.of(args));
        Process p = new ProcessBuilder(c).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.waitFor(), "git " + String.join(" ", args) + ": " + out);
        return out.trim();
    }

    @Test
    void fromDirectory_clientRoots_importThenPatchAndBranch() throws Exception {
        try (McpBridge mcp = McpBridge.stdio(home, McpBridge.poolOff(home))) {
            mcp.connectWithRoots(List.of(root.toString()));
            JsonNode open = mcp.ok("open_workspace", Map.of("name", "p", "from_directory", repo.toString(), "isolation", "namespace"));
            JsonNode imp = open.path("import");
            assertTrue(imp.path("git").asBoolean(), open.toString());
            assertEquals("main", imp.path("branch").asString());
            assertEquals(1, imp.path("ignored").asInt(), open.toString());
            JsonNode run = mcp.ok("run", Map.of("workspace", "p", "command", "cat README.md; test -e .env || echo no-env; echo new > new.txt"));
            assertEquals("hello, uncommitted\nno-env\n", run.path("stdout").asString());

            JsonNode patch = mcp.ok("export_changes", Map.of("workspace", "p"));
            assertTrue(patch.path("patch").asString().contains("+++ b/new.txt"), patch.toString());
            assertEquals(1, patch.path("change_count").asInt());

            String status = git(repo, "status", "--porcelain");
            JsonNode branch = mcp.ok("export_changes", Map.of("workspace", "p", "to", "branch"));
            assertEquals("berth/p", branch.path("branch").asString());
            assertEquals("new", git(repo, "show", "berth/p:new.txt"));
            assertEquals(status, git(repo, "status", "--porcelain"));
            assertEquals("main", git(repo, "branch", "--show-current"));

            JsonNode bad = mcp.call("export_changes", Map.of("workspace", "p", "to", "branch", "branch", "no..dots"));
            assertTrue(bad.path("isError").asBoolean() && bad.toString().contains("not a valid branch name"), bad.toString());
            JsonNode again = mcp.call("open_workspace", Map.of("name", "p", "from_directory", repo.toString(), "isolation", "namespace"));
            assertTrue(again.path("isError").asBoolean() && again.toString().contains("already exists"), again.toString());
            JsonNode outside = mcp.call("open_workspace", Map.of("from_directory", home.toString(), "isolation", "namespace"));
            assertTrue(outside.path("isError").asBoolean() && outside.toString().contains("outside every allowed root"), outside.toString());
        }
    }

    @Test
    void fromDirectory_noClientRoots_onlyOperatorProjectRoots() throws Exception {
        try (McpBridge mcp = McpBridge.stdio(home, McpBridge.poolOff(home))) {
            mcp.connect();
            JsonNode refused = mcp.call("open_workspace", Map.of("from_directory", repo.toString(), "isolation", "namespace"));
            assertTrue(refused.path("isError").asBoolean() && refused.toString().contains("no roots allow imports"), refused.toString());
        }
        Path cfg = home.resolve("roots.json");
        Files.writeString(cfg, "{\"pool\": {\"size\": 0}, \"project_roots\": [\"" + root + "\"]}");
        try (McpBridge mcp = McpBridge.stdio(home, "--config", cfg.toString())) {
            mcp.connect();
            JsonNode open = mcp.ok("open_workspace", Map.of("from_directory", repo.toString(), "isolation", "namespace"));
            assertTrue(open.path("import").path("git").asBoolean(), open.toString());
        }
    }

    @Test
    void manyAgentsExample_threeForksThreeBranches_userTreeUntouched() throws Exception {
        String head = git(repo, "rev-parse", "HEAD");
        String status = git(repo, "status", "--porcelain");
        Process p = new ProcessBuilder("node", "many-agents.mjs", repo.toString(), McpBridge.JAR.toString(), "--home", home.toString(),
                "--isolation", "namespace").directory(ExamplesE2eTest.EXAMPLES.toFile()).redirectErrorStream(true).start();
        p.getOutputStream().close();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(300, TimeUnit.SECONDS));
        assertEquals(0, p.exitValue(), out);
        assertTrue(out.strip().endsWith("done"), out);
        for (int i = 1; i <= 3; i++) {
            assertEquals("agent-" + i + " was here\nand some uncommitted work", git(repo, "show", "agents/agent-" + i + ":agent-" + i + ".txt"));
            assertEquals("agent-" + i + ": a committed change", git(repo, "log", "-1", "--format=%s", "agents/agent-" + i + "~1"));
            assertEquals(head, git(repo, "rev-parse", "agents/agent-" + i + "~2"));
        }
        assertEquals(head, git(repo, "rev-parse", "HEAD"));
        assertEquals(status, git(repo, "status", "--porcelain"));
        assertEquals("main", git(repo, "branch", "--show-current"));
    }
}
