package dev.berth.mcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;

/**
 * One home, many clients, with two real MCP clients (the official TypeScript SDK, each spawning its own
 * {@code berth stdio}): the second is served through the first (the owner) and never recovers or touches anything
 * itself, so the owner's live workspace, its memory and its background process survive; when the owner dies, the
 * next start takes the home over cleanly. Run on every driver, with the warm pool off (the test counts sandboxes).
 */
abstract class AbstractSharedHomeE2eTest {
    @TempDir Path home;

    /** Runs before JUnit deletes the home: a leak of the servers this test stopped is named here. */
    @org.junit.jupiter.api.AfterEach
    void nothingLeftBehind() {
        HomeLeaks.assertNone(home);
    }

    abstract String[] serverArgs();

    /** Whether park keeps running processes on this driver (then a background process survives a takeover too). */
    abstract boolean keepsProcesses();

    @Test
    void secondClient_isServedThroughTheOwner_andTouchesNothing() throws Exception {
        try (McpBridge a = McpBridge.stdio(home, McpBridge.poolOff(home, serverArgs()))) {
            long ownerPid = a.connect().path("pid").asLong();
            a.ok("open_workspace", Map.of("name", "shared"));
            a.ok("run", Map.of("workspace", "shared", "command", "echo from-a > a.txt"));
            // a long-lived process is a background run of its own: on namespace and gVisor nothing outlives its run.
            // B waits (up to a minute) for the loop's next tick: under TCG on a loaded host one turn can take seconds
            a.ok("run", Map.of("workspace", "shared", "background", true, "command",
                    "while true; do date +%s%N > /tmp/tick.new; mv /tmp/tick.new /tmp/tick; sleep 0.2; done"));
            List<Long> sandboxesBefore = sandboxes(ownerPid);
            assertFalse(sandboxesBefore.isEmpty());
            try (McpBridge b = McpBridge.stdio(home, McpBridge.poolOff(home, serverArgs()))) {
                long attachedPid = b.connect().path("pid").asLong();
                JsonNode listed = b.ok("list_workspaces", Map.of()).path("workspaces");
                assertEquals(1, listed.size(), listed.toString());
                assertEquals("running", listed.get(0).path("state").asString(), "B's start must not park or kill A's workspace");
                JsonNode r = b.ok("run", Map.of("workspace", "shared", "command",
                        "cat a.txt; t1=$(cat /tmp/tick); i=0; while [ $i -lt 60 ]; do sleep 1; [ \"$(cat /tmp/tick)\" != \"$t1\" ] && echo ticking && break;"
                        + " i=$((i+1)); done; echo from-b > b.txt"));
                assertEquals("from-a\nticking\n", r.path("stdout").asString(), r.toString());
                assertFalse(r.path("resumed").asBoolean(), "nothing was restarted: " + r);
                assertEquals(sandboxesBefore, sandboxes(ownerPid), "the same sandbox serves both clients");
                assertTrue(sandboxes(attachedPid).isEmpty(), "the attached process runs no sandbox of its own");
            }
            // B is gone; A's session and workspace carry on
            JsonNode r = a.ok("run", Map.of("workspace", "shared", "command", "cat b.txt"));
            assertEquals("from-b\n", r.path("stdout").asString());
            a.ok("close_workspace", Map.of("workspace", "shared", "delete", true));
        }
    }

    @Test
    void ownerDies_attachedClientIsToldAndTheNextStartTakesOver() throws Exception {
        try (McpBridge a = McpBridge.stdio(home, McpBridge.poolOff(home, serverArgs()))) {
            long ownerPid = a.connect().path("pid").asLong();
            a.ok("open_workspace", Map.of("name", "orphan"));
            a.ok("run", Map.of("workspace", "orphan", "command",
                    "echo kept > k.txt; sync; sh -c 'while true; do sleep 0.2; done' >/dev/null 2>&1 &"));
            try (McpBridge b = McpBridge.stdio(home, McpBridge.poolOff(home, serverArgs()))) {
                b.connect();
                ProcessHandle owner = ProcessHandle.of(ownerPid).orElseThrow();
                owner.destroyForcibly();
                owner.onExit().get(30, TimeUnit.SECONDS);
                JsonNode r = b.call("list_workspaces", Map.of());
                assertTrue(r.path("isError").asBoolean() || r.isMissingNode() || r.toString().contains("rror"),
                        "the attached client must not get answers from a dead owner: " + r);
            } catch (IOException expected) {
                // the client reports the closed connection
            }
        }
        try (McpBridge c = McpBridge.stdio(home, McpBridge.poolOff(home, serverArgs()))) {
            c.connect();
            JsonNode listed = c.ok("list_workspaces", Map.of()).path("workspaces").get(0);
            // microVM: its QEMU outlived the owner and was taken over; namespace: the sandbox died with the owner
            assertEquals(keepsProcesses() ? "running" : "parked", listed.path("state").asString(), listed.toString());
            assertFalse(listed.path("recovered").asString().isEmpty(), "the takeover says what happened: " + listed);
            JsonNode r = c.ok("run", Map.of("workspace", "orphan", "command", "cat k.txt"));
            assertEquals("kept\n", r.path("stdout").asString());
            c.ok("close_workspace", Map.of("workspace", "orphan", "delete", true));
        }
        assertTrue(Files.exists(home.resolve("owner.lock")));
    }

    /** Sandbox host processes (bwrap, QEMU) below a server process. */
    static List<Long> sandboxes(long serverPid) {
        return ProcessHandle.of(serverPid).map(p -> p.descendants()
                .filter(d -> d.info().command().map(c -> c.contains("qemu") || c.endsWith("bwrap")).orElse(false))
                .map(ProcessHandle::pid).sorted().toList()).orElse(List.of());
    }
}
