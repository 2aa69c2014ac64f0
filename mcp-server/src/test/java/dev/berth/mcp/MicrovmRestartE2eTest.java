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
 * A persistent microVM workspace survives the server: on a clean exit the server parks it with its memory, and the
 * next server resumes it exactly, running processes included. After a kill -9 no QEMU is left running and the
 * workspace comes back from its disk.
 */
class MicrovmRestartE2eTest {
    static final String[] ARGS = {"--isolation", "microvm", "--microvm-image", "test"};
    @TempDir Path home;

    @Test
    void cleanRestart_runningProcessSurvivesInsideTheParkedVm() throws Exception {
        long serverPid;
        try (McpBridge mcp = McpBridge.stdio(home, ARGS)) {
            serverPid = mcp.connect().path("pid").asLong();
            mcp.ok("open_workspace", Map.of("name", "vm-keep"));
            mcp.ok("run", Map.of("workspace", "vm-keep", "command",
                    // written then renamed: a reader never sees the file truncated mid-write
                    "echo on-disk > notes.txt; sh -c 'i=0; while true; do i=$((i+1)); echo $i > /tmp/c.new; mv /tmp/c.new /tmp/counter; sleep 0.2; done' >/dev/null 2>&1 &"));
            mcp.ok("run", Map.of("workspace", "vm-keep", "command", "sleep 1; cat /tmp/counter"));
        }
        ProcessHandle.of(serverPid).ifPresent(p -> p.onExit().orTimeout(60, TimeUnit.SECONDS).join());
        try (McpBridge mcp = McpBridge.stdio(home, ARGS)) {
            mcp.connect();
            JsonNode listed = mcp.ok("list_workspaces", Map.of()).path("workspaces").get(0);
            assertEquals("parked", listed.path("state").asString());
            JsonNode r = mcp.ok("run", Map.of("workspace", "vm-keep", "command",
                    "cat notes.txt; a=$(cat /tmp/counter); sleep 1; b=$(cat /tmp/counter); [ \"$b\" -gt \"$a\" ] && echo counting"));
            assertTrue(r.path("resumed").asBoolean(), r.toString());
            assertEquals("on-disk\ncounting\n", r.path("stdout").asString(), "the background loop must still run after the restart: " + r);
        }
    }

    @Test
    void killNine_noQemuLeftAndFilesComeBack() throws Exception {
        long serverPid;
        try (McpBridge mcp = McpBridge.stdio(home, ARGS)) {
            serverPid = mcp.connect().path("pid").asLong();
            mcp.ok("open_workspace", Map.of("name", "vm-crash"));
            mcp.ok("run", Map.of("workspace", "vm-crash", "command", "echo survived > notes.txt; sync"));
            ProcessHandle server = ProcessHandle.of(serverPid).orElseThrow();
            var qemus = server.descendants().filter(p -> p.info().command().orElse("").contains("qemu")).toList();
            assertFalse(qemus.isEmpty(), "expected a QEMU under the server");
            server.destroyForcibly();
            server.onExit().get(20, TimeUnit.SECONDS);
            try (McpBridge again = McpBridge.stdio(home, ARGS)) {
                again.connect(); // start-up cleans up what the dead server left
                for (ProcessHandle q : qemus) q.onExit().get(20, TimeUnit.SECONDS);
                JsonNode r = again.ok("run", Map.of("workspace", "vm-crash", "command", "cat notes.txt"));
                assertEquals("survived\n", r.path("stdout").asString());
                assertTrue(r.path("resumed").asBoolean());
            }
        }
    }
}
