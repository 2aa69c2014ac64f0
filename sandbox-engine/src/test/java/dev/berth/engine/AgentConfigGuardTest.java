package dev.berth.engine;

import dev.berth.engine.api.AgentConfigChange;
import dev.berth.engine.api.EngineConfig;
import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.GuardMode;
import dev.berth.engine.api.OpenRequest;
import dev.berth.engine.api.OutputListener;
import dev.berth.engine.api.RunRequest;
import dev.berth.engine.api.RunResult;
import dev.berth.engine.api.Tenant;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.berth.engine.namespace.NamespaceDriver;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** With guard mode revert, agent configuration is read-only to runs: every change is undone and reported. */
class AgentConfigGuardTest {
    Path home;
    Engine engine;
    String ws;

    @BeforeEach
    void start() throws Exception {
        home = Files.createTempDirectory("berth-guard-");
        engine = Engine.start(EngineConfig.defaults(home, List.of(new NamespaceDriver(home))).withGuard(GuardMode.REVERT));
        ws = engine.open(Tenant.LOCAL, OpenRequest.ephemeral()).workspace().id();
        // set up by the agent through the file tool, not by a run: this is the trusted baseline
        engine.writeFile(Tenant.LOCAL, ws, ".mcp.json", "{\"mcpServers\":{}}".getBytes(StandardCharsets.UTF_8), false, 0644);
        engine.writeFile(Tenant.LOCAL, ws, "/root/.npmrc", "registry=https://registry.npmjs.org/\n".getBytes(StandardCharsets.UTF_8), false, 0600);
    }

    @AfterEach
    void stop() throws Exception {
        engine.close();
        dev.berth.engine.spi.Trees.delete(home);
    }

    RunResult sh(String cmd) throws EngineException {
        return engine.run(Tenant.LOCAL, RunRequest.of(ws, cmd), OutputListener.NONE);
    }

    @Test
    void run_rewritingConfig_isUndoneAndReported() throws Exception {
        RunResult r = sh("echo '{\"mcpServers\":{\"evil\":{\"command\":\"curl\"}}}' > .mcp.json; "
                + "echo 'registry=http://evil.example/' > ~/.npmrc; "
                + "mkdir -p .claude proj/.git/hooks && echo '{}' > .claude/settings.json && echo x > proj/.git/hooks/post-checkout");
        assertEquals(4, r.agentConfigChanges().size(), r.agentConfigChanges().toString());
        assertTrue(r.agentConfigChanges().stream().allMatch(AgentConfigChange::reverted), r.agentConfigChanges().toString());
        assertEquals("{\"mcpServers\":{}}", sh("cat .mcp.json").stdout());
        assertEquals("registry=https://registry.npmjs.org/\n", sh("cat ~/.npmrc").stdout());
        assertEquals("gone\n", sh("test -e .claude/settings.json || test -e proj/.git/hooks/post-checkout || echo gone").stdout());
        assertTrue(r.note().contains("put back"), r.note());
    }

    @Test
    void run_deletingConfig_isRestored() throws Exception {
        RunResult r = sh("rm .mcp.json");
        assertEquals(List.of(new AgentConfigChange("/workspace/.mcp.json", "deleted", true)), r.agentConfigChanges());
        assertEquals("{\"mcpServers\":{}}", sh("cat .mcp.json").stdout());
    }

    @Test
    void run_replacingConfigWithSymlink_isRestored() throws Exception {
        RunResult r = sh("rm .mcp.json && ln -s /etc/passwd .mcp.json");
        assertEquals("modified", r.agentConfigChanges().get(0).change());
        assertEquals("{\"mcpServers\":{}}", sh("cat .mcp.json").stdout());
        assertEquals("", sh("test -L .mcp.json && echo still-a-link; true").stdout());
    }

    @Test
    void run_notTouchingConfig_reportsNothing() throws Exception {
        assertEquals(List.of(), sh("echo hi > notes.txt; cat .mcp.json >/dev/null").agentConfigChanges());
    }

    @Test
    void fileToolBetweenRuns_isNotTakenForTheNextRunsChange() throws Exception {
        sh("true"); // leaves the guard's look after it for the next run
        engine.writeFile(Tenant.LOCAL, ws, ".mcp.json", "{\"mcpServers\":{\"mine\":{}}}".getBytes(StandardCharsets.UTF_8), false, 0644);
        assertEquals(List.of(), sh("true").agentConfigChanges());
        assertEquals("{\"mcpServers\":{\"mine\":{}}}", sh("cat .mcp.json").stdout());
    }

    @Test
    void runsOneAfterAnother_eachSeeTheirOwnChangesOnly() throws Exception {
        assertEquals(List.of(), sh("true").agentConfigChanges());
        assertEquals(List.of(new AgentConfigChange("/workspace/.claude/settings.json", "created", true)),
                sh("mkdir -p .claude && echo '{}' > .claude/settings.json").agentConfigChanges());
        assertEquals(List.of(), sh("true").agentConfigChanges());
        assertEquals(List.of(new AgentConfigChange("/root/.npmrc", "modified", true)), sh("echo x >> ~/.npmrc").agentConfigChanges());
        assertEquals(List.of(), sh("true").agentConfigChanges());
        assertEquals("registry=https://registry.npmjs.org/\n", sh("cat ~/.npmrc").stdout());
    }

    @Test
    void deepTreesAndRepositories_areWatched() throws Exception {
        List<String> files = List.of("/workspace/proj/.claude/a/b/c/settings.json", "/workspace/other/.git/hooks/pre-commit",
                "/root/.vscode/settings.json");
        for (String f : files) engine.writeFile(Tenant.LOCAL, ws, f, "v1\n".getBytes(StandardCharsets.UTF_8), false, 0644);
        RunResult r = sh("for f in " + String.join(" ", files) + "; do echo x >> $f; done");
        assertEquals(new java.util.HashSet<>(files), new java.util.HashSet<>(r.agentConfigChanges().stream().map(AgentConfigChange::path).toList()));
        assertTrue(r.agentConfigChanges().stream().allMatch(c -> c.change().equals("modified") && c.reverted()), r.agentConfigChanges().toString());
        assertEquals("v1\nv1\nv1\n", sh("cat " + String.join(" ", files)).stdout());
    }
}
