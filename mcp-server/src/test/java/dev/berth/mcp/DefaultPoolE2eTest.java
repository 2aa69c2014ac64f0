package dev.berth.mcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import tools.jackson.databind.JsonNode;

/**
 * The warm pool a new user gets without configuring anything: `berth stdio` with no operator config keeps a namespace
 * sandbox started, and a fresh open claims it (`pool: "hit"`); what one tenant's claim wrote is nowhere in the next.
 */
class DefaultPoolE2eTest {
    @TempDir Path home;

    /** Runs before JUnit deletes the home: a leak of the servers this test stopped is named here. */
    @org.junit.jupiter.api.AfterEach
    void nothingLeftBehind() {
        HomeLeaks.assertNone(home);
    }

    @Test
    void noConfig_aFreshOpenClaimsAWaitingSandbox_andTheNextIsFresh() throws Exception {
        try (McpBridge mcp = McpBridge.stdio(home, "--isolation", "namespace")) {
            mcp.connect();
            // the first opens may come before the member is ready (a miss); one comes that claims it
            long deadline = System.nanoTime() + 60_000_000_000L;
            JsonNode hit;
            do {
                hit = mcp.ok("open_workspace", Map.of());
                String pool = hit.path("pool").asString();
                assertTrue(pool.equals("hit") || pool.equals("miss"), "a fresh open says whether it was a pool hit: " + hit);
                if (pool.equals("hit")) break;
                mcp.ok("close_workspace", Map.of("workspace", hit.path("workspace").asString(), "delete", true));
            } while (System.nanoTime() < deadline);
            assertEquals("hit", hit.path("pool").asString(), "the default pool serves a fresh open");
            String first = hit.path("workspace").asString();
            mcp.ok("run", Map.of("workspace", first, "command", "echo mine > /workspace/claimed.txt"));
            mcp.ok("close_workspace", Map.of("workspace", first, "delete", true));
            // the refilled member is a new sandbox: nothing of the first claim is in it
            JsonNode next;
            deadline = System.nanoTime() + 60_000_000_000L;
            do {
                next = mcp.ok("open_workspace", Map.of());
                if (next.path("pool").asString().equals("hit")) break;
                mcp.ok("close_workspace", Map.of("workspace", next.path("workspace").asString(), "delete", true));
            } while (System.nanoTime() < deadline);
            assertEquals("hit", next.path("pool").asString(), "the pool was refilled: " + next);
            JsonNode r = mcp.ok("run", Map.of("workspace", next.path("workspace").asString(), "command",
                    "cat /workspace/claimed.txt 2>/dev/null || echo none"));
            assertEquals("none\n", r.path("stdout").asString());
        }
    }
}
