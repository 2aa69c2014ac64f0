package dev.berth.mcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.berth.engine.Await;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;

/**
 * A persistent microVM workspace survives the server: on a clean exit the server parks it with its memory, and the
 * next server resumes it exactly, running processes included. After a kill -9 the next server takes over the QEMU
 * that outlived it; when QEMU died too, the workspace comes back from its disk and says that memory was lost.
 */
class MicrovmRestartE2eTest {
    /** With the warm pool off: the test counts the QEMU processes under the server (a KVM host would pool a microVM). */
    static final String[] ARGS = {"--isolation", "microvm", "--microvm-image", "test"};
    @TempDir Path home;

    /** Runs before JUnit deletes the home: a leak of the servers this test stopped is named here. */
    @org.junit.jupiter.api.AfterEach
    void nothingLeftBehind() {
        HomeLeaks.assertNone(home);
    }

    @Test
    void cleanRestart_runningProcessSurvivesInsideTheParkedVm() throws Exception {
        long serverPid;
        try (McpBridge mcp = McpBridge.stdio(home, McpBridge.poolOff(home, ARGS))) {
            serverPid = mcp.connect().path("pid").asLong();
            mcp.ok("open_workspace", Map.of("name", "vm-keep"));
            mcp.ok("run", Map.of("workspace", "vm-keep", "command", "echo on-disk > notes.txt"));
            // a background run of its own (nothing outlives its run in a guest either); written then renamed: a
            // reader never sees the file truncated mid-write
            mcp.ok("run", Map.of("workspace", "vm-keep", "background", true, "command",
                    "i=0; while true; do i=$((i+1)); echo $i > /tmp/c.new; mv /tmp/c.new /tmp/counter; sleep 0.2; done"));
            mcp.ok("run", Map.of("workspace", "vm-keep", "command", "sleep 1; cat /tmp/counter"));
        }
        ProcessHandle.of(serverPid).ifPresent(p -> p.onExit().orTimeout(60, TimeUnit.SECONDS).join());
        try (McpBridge mcp = McpBridge.stdio(home, McpBridge.poolOff(home, ARGS))) {
            mcp.connect();
            JsonNode listed = mcp.ok("list_workspaces", Map.of()).path("workspaces").get(0);
            assertEquals("parked", listed.path("state").asString());
            JsonNode r = mcp.ok("run", Map.of("workspace", "vm-keep", "command",
                    "cat notes.txt; a=$(cat /tmp/counter); sleep 1; b=$(cat /tmp/counter); [ \"$b\" -gt \"$a\" ] && echo counting"));
            assertTrue(r.path("resumed").asBoolean(), r.toString());
            assertEquals("on-disk\ncounting\n", r.path("stdout").asString(), "the background loop must still run after the restart: " + r);
        }
    }

    /**
     * kill -9 of the server while a run is in flight: the next server takes over the QEMU that outlived it, so a
     * file written without sync, the guest's memory and its running processes are all still there, the same QEMU
     * process serves on, and the first result says what happened, including the run it lost and did not repeat.
     */
    @Test
    void killNine_nextServerTakesOverTheRunningVm_nothingLost() throws Exception {
        long serverPid;
        String id;
        long qemuPid;
        try (McpBridge mcp = McpBridge.stdio(home, McpBridge.poolOff(home, ARGS))) {
            serverPid = mcp.connect().path("pid").asLong();
            id = mcp.ok("open_workspace", Map.of("name", "vm-crash")).path("workspace").asString();
            mcp.ok("run", Map.of("workspace", "vm-crash", "command", "echo unsynced > notes.txt; echo in-memory > /tmp/mem.txt"));
            mcp.ok("run", Map.of("workspace", "vm-crash", "background", true, "command",
                    "i=0; while true; do i=$((i+1)); echo $i > /tmp/c.new; mv /tmp/c.new /tmp/counter; sleep 0.2; done"));
            ProcessHandle server = ProcessHandle.of(serverPid).orElseThrow();
            List<ProcessHandle> qemus = server.descendants().filter(p -> p.info().command().orElse("").contains("qemu")).toList();
            assertEquals(1, qemus.size(), "expected one QEMU under the server");
            qemuPid = qemus.get(0).pid();
            // a run in flight when the server dies: the journal file shows it started
            Thread inFlight = Thread.ofVirtual().start(() -> {
                try {
                    mcp.call("run", Map.of("workspace", "vm-crash", "command", "sleep 120"));
                } catch (IOException expected) {
                    // the server dies under it
                }
            });
            Path journal = home.resolve("workspaces").resolve(id).resolve("runs.journal");
            // the journal already names the background run: wait for the one in flight
            Await.within(Duration.ofSeconds(60), () -> journalNames(journal, "sleep 120"));
            assertTrue(journalNames(journal, "sleep 120"), "the run never started");
            server.destroyForcibly();
            server.onExit().get(20, TimeUnit.SECONDS);
            inFlight.join(Duration.ofSeconds(30));
        }
        assertTrue(ProcessHandle.of(qemuPid).map(ProcessHandle::isAlive).orElse(false), "QEMU outlives a killed server");
        try (McpBridge again = McpBridge.stdio(home, McpBridge.poolOff(home, ARGS))) {
            again.connect();
            JsonNode listed = again.ok("list_workspaces", Map.of()).path("workspaces").get(0);
            assertEquals("running", listed.path("state").asString(), listed.toString());
            JsonNode r = again.ok("run", Map.of("workspace", "vm-crash", "command",
                    "cat notes.txt /tmp/mem.txt; a=$(cat /tmp/counter); sleep 1; b=$(cat /tmp/counter); [ \"$b\" -gt \"$a\" ] && echo counting"));
            assertEquals("unsynced\nin-memory\ncounting\n", r.path("stdout").asString(), r.toString());
            assertFalse(r.path("resumed").asBoolean(), "taken over, not resumed: " + r);
            String recovered = r.path("recovered").asString();
            assertTrue(recovered.contains("kept running and was taken over"), recovered);
            assertTrue(recovered.contains("(sleep 120) was in flight: it was not repeated"), recovered);
            assertTrue(ProcessHandle.of(qemuPid).map(ProcessHandle::isAlive).orElse(false), "the same QEMU serves on");
            JsonNode next = again.ok("run", Map.of("workspace", "vm-crash", "command", "true"));
            assertTrue(next.path("recovered").isMissingNode(), "said once: " + next);
        }
    }

    /** kill -9 of the server and of its QEMU: the next server cold-boots the disk and says that memory was lost. */
    @Test
    void killNine_serverAndQemu_coldBootSaysMemoryLost() throws Exception {
        try (McpBridge mcp = McpBridge.stdio(home, McpBridge.poolOff(home, ARGS))) {
            long serverPid = mcp.connect().path("pid").asLong();
            mcp.ok("open_workspace", Map.of("name", "vm-gone"));
            mcp.ok("run", Map.of("workspace", "vm-gone", "command", "echo survived > notes.txt; sync; echo lost > /tmp/mem.txt"));
            ProcessHandle server = ProcessHandle.of(serverPid).orElseThrow();
            List<ProcessHandle> qemus = server.descendants().filter(p -> p.info().command().orElse("").contains("qemu")).toList();
            server.destroyForcibly();
            server.onExit().get(20, TimeUnit.SECONDS);
            for (ProcessHandle q : qemus) {
                q.destroyForcibly();
                q.onExit().get(20, TimeUnit.SECONDS);
            }
        }
        try (McpBridge again = McpBridge.stdio(home, McpBridge.poolOff(home, ARGS))) {
            again.connect();
            JsonNode listed = again.ok("list_workspaces", Map.of()).path("workspaces").get(0);
            assertEquals("parked", listed.path("state").asString());
            assertTrue(listed.path("recovered").asString().startsWith("cold boot, memory lost"), listed.toString());
            JsonNode r = again.ok("run", Map.of("workspace", "vm-gone", "command", "cat notes.txt; cat /tmp/mem.txt 2>/dev/null || echo no-memory"));
            assertEquals("survived\nno-memory\n", r.path("stdout").asString());
            assertTrue(r.path("resumed").asBoolean());
            assertTrue(r.path("recovered").asString().startsWith("cold boot, memory lost"), r.toString());
        }
    }

    private static boolean journalNames(Path journal, String command) {
        try {
            return Files.exists(journal) && Files.readString(journal).contains(command);
        } catch (IOException e) {
            return false;
        }
    }
}
