package dev.berth.mcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;

/**
 * Persistent workspaces survive the server process: a clean exit (stdin closed) and a kill -9. The warm pool is off:
 * the test counts the server's sandboxes and workspace directories.
 */
class RestartE2eTest {
    @TempDir Path home;

    /** Runs before JUnit deletes the home: a leak of the servers this test stopped is named here. */
    @org.junit.jupiter.api.AfterEach
    void nothingLeftBehind() {
        HomeLeaks.assertNone(home);
    }

    @Test
    void killNine_persistentFilesSurviveAndSandboxDiesWithServer() throws Exception {
        String id;
        long serverPid;
        try (McpBridge mcp = McpBridge.stdio(home, McpBridge.poolOff(home, "--isolation", "namespace"))) {
            serverPid = mcp.connect().path("pid").asLong();
            id = mcp.ok("open_workspace", Map.of("name", "keeper")).path("workspace").asString();
            mcp.ok("run", Map.of("workspace", "keeper", "command", "echo survived > state.txt; mkdir -p ~/.cache && echo dot > ~/.cache/x"));
            mcp.ok("open_workspace", Map.of()); // an ephemeral one, to be cleaned up at the next start
            ProcessHandle server = ProcessHandle.of(serverPid).orElseThrow();
            var sandboxes = server.descendants().filter(p -> p.info().command().orElse("").endsWith("bwrap")).toList();
            assertFalse(sandboxes.isEmpty(), "expected bwrap processes under the server");
            server.destroyForcibly(); // SIGKILL: no shutdown hook runs
            server.onExit().get(30, TimeUnit.SECONDS);
            for (ProcessHandle p : sandboxes) p.onExit().get(30, TimeUnit.SECONDS); // --die-with-parent
        }
        try (McpBridge mcp = McpBridge.stdio(home, McpBridge.poolOff(home, "--isolation", "namespace"))) {
            mcp.connect();
            JsonNode list = mcp.ok("list_workspaces", Map.of());
            assertEquals(1, list.path("workspaces").size(), "the ephemeral workspace should be gone: " + list);
            JsonNode ws = list.path("workspaces").get(0);
            assertEquals(id, ws.path("workspace").asString());
            assertEquals("parked", ws.path("state").asString());
            JsonNode r = mcp.ok("run", Map.of("workspace", "keeper", "command", "cat state.txt ~/.cache/x"));
            assertEquals("survived\ndot\n", r.path("stdout").asString());
            assertTrue(r.path("resumed").asBoolean());
        }
        try (var s = Files.list(home.resolve("workspaces"))) {
            assertEquals(1, s.count(), "only the persistent workspace stays on disk");
        }
    }

    @Test
    void stdinClosed_serverExitsParksPersistentAndDeletesEphemeral() throws Exception {
        String ephemeral;
        long serverPid;
        try (McpBridge mcp = McpBridge.stdio(home, McpBridge.poolOff(home, "--isolation", "namespace"))) {
            serverPid = mcp.connect().path("pid").asLong();
            mcp.ok("open_workspace", Map.of("name", "calm"));
            mcp.ok("run", Map.of("workspace", "calm", "command", "echo calm > c.txt"));
            ephemeral = mcp.ok("open_workspace", Map.of()).path("workspace").asString();
        } // closing the bridge closes the server's stdin
        ProcessHandle.of(serverPid).ifPresent(p -> {
            try {
                p.onExit().get(20, TimeUnit.SECONDS);
            } catch (Exception e) {
                throw new AssertionError("server did not exit after stdin closed", e);
            }
        });
        assertFalse(Files.exists(home.resolve("workspaces").resolve(ephemeral)), "ephemeral workspace left on disk");
        try (McpBridge mcp = McpBridge.stdio(home, McpBridge.poolOff(home, "--isolation", "namespace"))) {
            mcp.connect();
            assertEquals("calm\n", mcp.ok("run", Map.of("workspace", "calm", "command", "cat c.txt")).path("stdout").asString());
        }
    }
}
