package dev.berth.mcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;

/**
 * A background process of a microVM workspace keeps its handle: after park and resume, and after a kill -9 of the
 * server (the next server takes the QEMU over), the same process id reports the output the loop went on printing
 * and finally its exit, through a real MCP client.
 */
class MicrovmProcessHandleE2eTest {
    /** With the warm pool off: the test counts the QEMU processes under the server (a KVM host would pool a microVM). */
    static final String[] ARGS = {"--isolation", "microvm", "--microvm-image", "test"};
    /** Prints a counter; exits 5 once /tmp/stop exists. */
    static final String LOOP = "i=0; while true; do i=$((i+1)); echo tick $i; if [ -e /tmp/stop ]; then echo stopping; exit 5; fi; sleep 0.2; done";
    private static final Pattern TICK = Pattern.compile("tick (\\d+)");
    @TempDir Path home;

    /** Runs before JUnit deletes the home: a leak of the servers this test stopped is named here. */
    @org.junit.jupiter.api.AfterEach
    void nothingLeftBehind() {
        HomeLeaks.assertNone(home);
    }

    /** Reads the process until its stdout so far holds a tick above {@code above}; returns the highest tick seen. */
    private static int followUntilTickAbove(McpBridge mcp, String ws, String process, int above, StringBuilder seen) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
        int last = above;
        while (System.nanoTime() < deadline) {
            JsonNode p = mcp.ok("run", Map.of("workspace", ws, "process", process, "wait_s", 5));
            assertTrue(p.path("running").asBoolean(), "the loop must still run: " + p);
            seen.append(p.path("stdout").asString());
            Matcher m = TICK.matcher(seen);
            while (m.find()) last = Math.max(last, Integer.parseInt(m.group(1)));
            if (last > above) return last;
        }
        throw new AssertionError("no tick above " + above + " within 90 s; output so far: " + seen);
    }

    /** Stops the loop from the inside and waits for the same handle to report its exit. */
    private static void stopAndExpectExit(McpBridge mcp, String ws, String process, StringBuilder seen) throws Exception {
        mcp.ok("run", Map.of("workspace", ws, "command", "touch /tmp/stop"));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        JsonNode p;
        do {
            p = mcp.ok("run", Map.of("workspace", ws, "process", process, "wait_s", 5));
            seen.append(p.path("stdout").asString());
        } while (p.path("running").asBoolean() && System.nanoTime() < deadline);
        assertFalse(p.path("running").asBoolean(), "the loop never ended: " + p);
        assertEquals(5, p.path("exit_code").asInt(), p.toString());
        assertTrue(seen.toString().endsWith("stopping\n"), seen.toString());
    }

    /**
     * Ticks come in order and none twice. Gaps are possible where output had reached a server that died before its
     * client read it (kill -9), so only order and uniqueness are asserted; the first tick is always there.
     */
    private static void assertInOrderNoneTwice(String seen) {
        Matcher m = TICK.matcher(seen);
        int prev = 0;
        while (m.find()) {
            int t = Integer.parseInt(m.group(1));
            assertTrue(t > prev, "tick " + t + " after " + prev + ": " + seen);
            prev = t;
        }
        assertTrue(seen.startsWith("tick 1\n"), seen);
    }

    @Test
    void parkAndResume_sameHandleReportsNewOutputThenTheExit() throws Exception {
        try (McpBridge mcp = McpBridge.stdio(home, McpBridge.poolOff(home, ARGS))) {
            mcp.connect();
            mcp.ok("open_workspace", Map.of("name", "vm-bg"));
            String process = mcp.ok("run", Map.of("workspace", "vm-bg", "background", true, "command", LOOP)).path("process").asString();
            StringBuilder seen = new StringBuilder();
            int before = followUntilTickAbove(mcp, "vm-bg", process, 1, seen);

            JsonNode park = mcp.ok("park", Map.of("workspace", "vm-bg"));
            assertTrue(park.path("memory_kept").asBoolean(), park.toString());
            assertTrue(park.path("note").asString().contains("1 background process(es) keep their ids"), park.toString());
            JsonNode listed = mcp.ok("list_workspaces", Map.of()).path("workspaces").get(0);
            assertEquals("parked", listed.path("state").asString());

            // reading the process resumes the workspace and re-attaches the loop under the same id
            followUntilTickAbove(mcp, "vm-bg", process, before, seen);
            stopAndExpectExit(mcp, "vm-bg", process, seen);
            assertInOrderNoneTwice(seen.toString());
        }
    }

    @Test
    void killNine_nextServerTakesTheVmOver_sameHandleReportsNewOutputThenTheExit() throws Exception {
        String process;
        StringBuilder seen = new StringBuilder();
        int before;
        long qemuPid;
        try (McpBridge mcp = McpBridge.stdio(home, McpBridge.poolOff(home, ARGS))) {
            long serverPid = mcp.connect().path("pid").asLong();
            mcp.ok("open_workspace", Map.of("name", "vm-bg-crash"));
            process = mcp.ok("run", Map.of("workspace", "vm-bg-crash", "background", true, "command", LOOP)).path("process").asString();
            before = followUntilTickAbove(mcp, "vm-bg-crash", process, 1, seen);
            ProcessHandle server = ProcessHandle.of(serverPid).orElseThrow();
            List<ProcessHandle> qemus = server.descendants().filter(p -> p.info().command().orElse("").contains("qemu")).toList();
            assertEquals(1, qemus.size(), "expected one QEMU under the server");
            qemuPid = qemus.get(0).pid();
            server.destroyForcibly();
            server.onExit().get(20, TimeUnit.SECONDS);
        }
        assertTrue(ProcessHandle.of(qemuPid).map(ProcessHandle::isAlive).orElse(false), "QEMU outlives a killed server");
        try (McpBridge again = McpBridge.stdio(home, McpBridge.poolOff(home, ARGS))) {
            again.connect();
            JsonNode listed = again.ok("list_workspaces", Map.of()).path("workspaces").get(0);
            assertEquals("running", listed.path("state").asString(), listed.toString());
            // output the loop printed while no server was attached is delivered first, then it streams on
            followUntilTickAbove(again, "vm-bg-crash", process, before + 3, seen);
            JsonNode r = again.ok("run", Map.of("workspace", "vm-bg-crash", "command", "true"));
            String recovered = r.path("recovered").asString();
            assertTrue(recovered.contains("kept running and was taken over"), r.toString());
            assertFalse(recovered.contains(process), "the process was not lost: " + r);
            stopAndExpectExit(again, "vm-bg-crash", process, seen);
            assertInOrderNoneTwice(seen.toString());
        }
    }
}
