package dev.berth.mcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/** Over stdio too, a client's notifications/cancelled for a running run kills its command in the workspace. */
class StdioCancelE2eTest {
    @Test
    void cancelledRun_killsTheCommandInsideTheWorkspace() throws Exception {
        Path home = Files.createTempDirectory("berth-cancel-");
        try (McpBridge c = McpBridge.stdio(home, "--isolation", "namespace")) {
            c.connect();
            String id = HttpE2eTest.ok(c, "open_workspace", Map.of()).path("workspace").asString();
            JsonNode aborted = c.send(Map.of("op", "cancel-call", "name", "run", "cancelAfterMs", 1500, "args", Map.of("workspace", id,
                    "command", "echo $$ > /workspace/run.pid; touch /workspace/started; sleep 300; touch /workspace/finished")));
            assertFalse(aborted.path("ok").asBoolean(), "the client saw the call aborted: " + aborted);
            assertEquals("started\n0", HttpE2eTest.commandGone(c, id));
            HttpE2eTest.ok(c, "close_workspace", Map.of("workspace", id));
        } finally {
            HomeLeaks.assertNone(home); // a leak is named here, before the delete
            dev.berth.engine.spi.Trees.delete(home);
        }
    }
}
