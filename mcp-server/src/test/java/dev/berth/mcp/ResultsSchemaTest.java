package dev.berth.mcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.berth.engine.api.CloseResult;
import dev.berth.engine.api.ImageRef;
import dev.berth.engine.api.Lifecycle;
import dev.berth.engine.api.OpenResult;
import dev.berth.engine.api.ParkResult;
import dev.berth.engine.api.ProcessStatus;
import dev.berth.engine.api.SnapshotInfo;
import dev.berth.engine.api.WorkspaceInfo;
import dev.berth.engine.api.WorkspaceState;
import dev.berth.engine.spi.DriverCapabilities;
import dev.berth.engine.spi.Limit;
import dev.berth.engine.spi.Resources;
import dev.berth.mcp.tools.Results;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Every result record, serialized by Jackson, against its tool's output schema, with optional members absent and present. */
class ResultsSchemaTest {
    private static WorkspaceInfo info(String id, String recovered, ImageRef image) {
        Instant t = Instant.parse("2026-11-30T10:00:00Z");
        return new WorkspaceInfo(id, "name-" + id, Lifecycle.PERSISTENT, "namespace", WorkspaceState.RUNNING,
                new DriverCapabilities("namespace", "bubblewrap namespaces", false, false, false, "none"), t, t, null, 0,
                List.of("npm"), List.of(), recovered, recovered == null ? null : t.plusSeconds(900), null, Resources.DEFAULT,
                List.of(new Limit("memory", 512, "MiB", true, "cgroup v1 memory.limit_in_bytes")), image);
    }

    @Test
    void openResult_plainAndWithEverything_matchTheSchema() {
        var plain = McpBridge.JSON.valueToTree(Results.open(new OpenResult(info("ws-1", null, null), true, false, "created", null)));
        SchemaCheck.assertValid("open_workspace", plain);
        assertEquals("ws-1", plain.get("workspace").asString());
        assertEquals(512, plain.get("resources").get("memory_mib").asInt());
        assertTrue(plain.get("from_snapshot").isNull(), "always present, null when absent");
        assertFalse(plain.has("recovered") || plain.has("image") || plain.has("pool"), plain.toString());

        var full = McpBridge.JSON.valueToTree(Results.open(new OpenResult(info("ws-2", "taken over", new ImageRef("dev", "sha256:ab")),
                false, true, "resumed", "hit")));
        SchemaCheck.assertValid("open_workspace", full);
        assertEquals("taken over", full.get("recovered").asString());
        assertEquals("sha256:ab", full.get("image").get("digest").asString());
        assertEquals("hit", full.get("pool").asString());
        assertTrue(full.get("capabilities").has("park_keeps_memory"));
    }

    @Test
    void openMany_listsEveryFork_andTheFirstAtTheTop() {
        var r = McpBridge.JSON.valueToTree(Results.openMany(List.of(
                new OpenResult(info("ws-1", null, null), true, false, "forked", null),
                new OpenResult(info("ws-2", null, null), true, false, "forked", null))));
        SchemaCheck.assertValid("open_workspace", r);
        assertEquals("ws-1", r.get("workspace").asString());
        assertEquals(2, r.get("forks").size());
        assertTrue(r.get("note").asString().startsWith("forked 2 workspaces"), r.toString());
    }

    @Test
    void parkSnapshotCloseAndProcess_matchTheirSchemas() {
        SchemaCheck.assertValid("park", McpBridge.JSON.valueToTree(
                Results.park(new ParkResult(info("ws-1", null, null), true, false, 4096, 120, "parked with memory"))));
        var snap = McpBridge.JSON.valueToTree(Results.snapshot(new SnapshotInfo("snap-1", "tpl", "ws-1", "namespace", false,
                8192, Instant.parse("2026-11-30T10:00:00Z"), List.of("ws-2"))));
        SchemaCheck.assertValid("snapshot", snap);
        assertEquals("ws-1", snap.get("workspace").asString());
        assertEquals("ws-2", snap.get("dependents").get(0).asString());
        SchemaCheck.assertValid("close_workspace", McpBridge.JSON.valueToTree(
                Results.close(new CloseResult("ws-1", null, Lifecycle.EPHEMERAL, true, "deleted"))));
        var running = McpBridge.JSON.valueToTree(Results.process(new ProcessStatus("proc-1", "ws-1", 42, "sleep 9", true, null,
                0, false, "a", "", 0, 1, 0, 0, 0, 0, 10, null)));
        SchemaCheck.assertValid("run", running);
        assertTrue(running.get("exit_code").isNull());
        assertEquals(1, running.get("stdout_next").asInt());
        var dropped = Results.process(new ProcessStatus("proc-1", "ws-1", 42, "x", false, 0, 0, false, "", "", 0, 9, 0, 0, 5, 0, 10, null));
        assertEquals(Boolean.TRUE, dropped.get("stdout_truncated"));
        assertTrue(((String) dropped.get("note")).contains("5 bytes of output"), dropped.toString());
    }
}
