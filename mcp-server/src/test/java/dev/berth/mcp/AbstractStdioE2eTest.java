package dev.berth.mcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import tools.jackson.databind.JsonNode;

/**
 * The end-to-end suite, run against every isolation driver: the official MCP TypeScript client drives
 * {@code java -jar berth.jar stdio}. Each driver's subclass names its isolation level.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class AbstractStdioE2eTest {
    Path home;
    McpBridge mcp;

    abstract String isolation();

    /** Options for `berth stdio` besides --home. */
    String[] serverArgs() { return new String[] {"--isolation", isolation()}; }

    @BeforeAll
    void start() throws IOException {
        home = Files.createTempDirectory("berth-e2e-" + isolation() + "-");
        // the warm pool is off: these tests compare the home's files and the server's sandboxes before and after
        // (DefaultPoolE2eTest runs the server's default pool)
        mcp = McpBridge.stdio(home, McpBridge.poolOff(home, serverArgs()));
        mcp.connect();
    }

    @AfterAll
    void stop() throws IOException {
        mcp.close();
        HomeLeaks.assertNone(home); // before the delete: a leak is named here, not reported as "Device or resource busy"
        dev.berth.engine.spi.Trees.delete(home);
    }

    JsonNode ok(String tool, Map<String, Object> args) throws IOException {
        JsonNode r = mcp.call(tool, args);
        assertFalse(r.path("isError").asBoolean(), () -> tool + " failed: " + r);
        JsonNode sc = r.path("structuredContent");
        SchemaCheck.assertValid(tool, sc);
        assertMirrors(sc, McpBridge.JSON.readTree(r.path("content").get(0).path("text").asString()));
        return sc;
    }

    /** The text content mirrors the structured content, except long or binary fields, which it only summarises. */
    static void assertMirrors(JsonNode sc, JsonNode mirror) {
        assertEquals(sc.propertyNames(), mirror.propertyNames());
        for (String f : sc.propertyNames()) {
            if (sc.get(f).equals(mirror.get(f))) continue;
            String summary = mirror.get(f).asString();
            assertTrue(summary.contains("not repeated in this text: see structuredContent." + f), () -> f + " is neither mirrored nor summarised: " + summary);
        }
    }

    String error(String tool, Map<String, Object> args) throws IOException {
        JsonNode r = mcp.call(tool, args);
        assertTrue(r.path("isError").asBoolean(), () -> tool + " should have failed: " + r);
        return r.path("content").get(0).path("text").asString();
    }

    @Test
    void toolsList_listsEveryToolWithSchemasAndAnnotations() throws IOException {
        JsonNode tools = mcp.send(Map.of("op", "list")).path("tools");
        Set<String> names = new HashSet<>();
        for (JsonNode t : tools) {
            names.add(t.path("name").asString());
            assertEquals("object", t.path("inputSchema").path("type").asString(), t.toString());
            assertEquals("object", t.path("outputSchema").path("type").asString(), t.toString());
            assertTrue(t.path("description").asString().length() > 80, "a tool description is the agent's manual: " + t);
            assertTrue(t.path("annotations").has("readOnlyHint"), t.toString());
        }
        assertEquals(Set.of("open_workspace", "run", "park", "snapshot", "close_workspace", "list_workspaces",
                "read_file", "write_file", "list_files", "expose_port", "request_egress", "export_changes"), names);
    }

    @Test
    void persistentWorkspace_fileSurvivesParkAndForkSeesSnapshot() throws IOException {
        JsonNode open = ok("open_workspace", Map.of("name", "proj-" + isolation()));
        assertEquals("persistent", open.path("lifecycle").asString());
        assertEquals(isolation(), open.path("isolation").asString());
        assertEquals("running", open.path("state").asString());
        assertTrue(open.path("created").asBoolean());
        String id = open.path("workspace").asString();

        JsonNode w = ok("run", Map.of("workspace", id, "command", "mkdir -p src && echo 'hello berth' > src/notes.txt && cat src/notes.txt"));
        assertEquals(0, w.path("exit_code").asInt());
        assertEquals("hello berth\n", w.path("stdout").asString());

        JsonNode park = ok("park", Map.of("workspace", "proj-" + isolation()));
        assertEquals("parked", park.path("state").asString());
        assertEquals(park.path("capabilities").path("park_keeps_memory").asBoolean(), park.path("memory_kept").asBoolean());

        JsonNode again = ok("park", Map.of("workspace", id));
        assertTrue(again.path("already_parked").asBoolean());

        JsonNode read = ok("run", Map.of("workspace", id, "command", "cat src/notes.txt"));
        assertEquals("hello berth\n", read.path("stdout").asString());
        assertTrue(read.path("resumed").asBoolean());

        JsonNode snap = ok("snapshot", Map.of("workspace", id, "name", "snap-before-change-" + isolation()));
        ok("run", Map.of("workspace", id, "command", "echo changed > src/notes.txt"));

        JsonNode fork = ok("open_workspace", Map.of("from_snapshot", snap.path("snapshot").asString()));
        assertEquals("ephemeral", fork.path("lifecycle").asString());
        assertEquals(snap.path("snapshot").asString(), fork.path("from_snapshot").asString());
        String forkId = fork.path("workspace").asString();
        assertEquals("hello berth\n", ok("run", Map.of("workspace", forkId, "command", "cat src/notes.txt")).path("stdout").asString());
        assertEquals("changed\n", ok("run", Map.of("workspace", id, "command", "cat src/notes.txt")).path("stdout").asString());

        // reopening by name finds the same workspace
        JsonNode reopen = ok("open_workspace", Map.of("name", "proj-" + isolation()));
        assertFalse(reopen.path("created").asBoolean());
        assertEquals(id, reopen.path("workspace").asString());

        JsonNode list = ok("list_workspaces", Map.of());
        assertTrue(list.path("snapshots").toString().contains(snap.path("snapshot").asString()));
        String both = error("snapshot", Map.of("workspace", id, "delete", "x"));
        assertTrue(both.contains("not both"), both);

        if (!isolation().equals("gvisor")) {
            // a microVM fork holds its own links to the snapshot's layers, a namespace fork owns its layer (a copy,
            // or a subvolume snapshot in the layer pool): the snapshot goes, the fork works on
            JsonNode deleted = ok("snapshot", Map.of("delete", "snap-before-change-" + isolation()));
            assertTrue(deleted.path("deleted").asBoolean());
            assertEquals("hello berth\n", ok("run", Map.of("workspace", forkId, "command", "cat src/notes.txt")).path("stdout").asString());
            assertTrue(ok("close_workspace", Map.of("workspace", forkId)).path("deleted").asBoolean());
        } else {
            String busy = error("snapshot", Map.of("delete", snap.path("snapshot").asString()));
            assertTrue(busy.contains("workspace " + forkId) && busy.contains("still builds on it"), busy);
            assertTrue(ok("close_workspace", Map.of("workspace", forkId)).path("deleted").asBoolean());
            JsonNode deleted = ok("snapshot", Map.of("delete", "snap-before-change-" + isolation()));
            assertTrue(deleted.path("deleted").asBoolean());
        }
        assertFalse(ok("list_workspaces", Map.of()).path("snapshots").toString().contains(snap.path("snapshot").asString()));
        String twice = error("snapshot", Map.of("delete", snap.path("snapshot").asString()));
        assertTrue(twice.contains("no snapshot"), twice);
        String refused = error("close_workspace", Map.of("workspace", id));
        assertTrue(refused.contains("is persistent") && refused.contains("delete: true"), refused);
        assertTrue(ok("close_workspace", Map.of("workspace", id, "delete", true)).path("deleted").asBoolean());
        assertFalse(Files.exists(home.resolve("workspaces").resolve(id)), "closed workspace left files");
        String gone = error("run", Map.of("workspace", id, "command", "true"));
        assertTrue(gone.contains("no workspace '" + id + "'"), gone);
    }

    @Test
    void forkMany_countOpensIndependentForks_outOfRangeRefusedWithTheLimit() throws IOException {
        String id = ok("open_workspace", Map.of("name", "tpl-" + isolation())).path("workspace").asString();
        ok("run", Map.of("workspace", id, "command", "echo prepared > state.txt"));
        String snap = ok("snapshot", Map.of("workspace", id, "name", "tpl-snap-" + isolation())).path("snapshot").asString();

        JsonNode many = ok("open_workspace", Map.of("from_snapshot", snap, "count", 3));
        JsonNode forks = many.path("forks");
        assertEquals(3, forks.size(), many.toString());
        assertEquals(forks.get(0).path("workspace").asString(), many.path("workspace").asString());
        assertTrue(many.path("note").asString().contains("forked 3 workspaces"), many.toString());
        Set<String> ids = new HashSet<>();
        for (JsonNode f : forks) {
            String fid = f.path("workspace").asString();
            assertTrue(ids.add(fid), "distinct ids: " + forks);
            assertEquals(snap, f.path("from_snapshot").asString());
            assertEquals("prepared\n" + fid + "\n", ok("run", Map.of("workspace", fid,
                    "command", "echo " + fid + " >> state.txt && cat state.txt")).path("stdout").asString());
        }
        for (List<Object> c : List.<List<Object>>of(
                List.of(Map.of("from_snapshot", snap, "count", 0), "count must be between 1 and 16"),
                List.of(Map.of("from_snapshot", snap, "count", 17), "count must be between 1 and 16"),
                List.of(Map.of("count", 2), "give from_snapshot"),
                List.of(Map.of("from_snapshot", snap, "count", 2, "name", "x"), "cannot be given to 2 workspaces"))) {
            @SuppressWarnings("unchecked") Map<String, Object> args = (Map<String, Object>) c.get(0);
            String msg = error("open_workspace", args);
            assertTrue(msg.contains((String) c.get(1)), args + " -> " + msg);
        }
        for (String fid : ids) ok("close_workspace", Map.of("workspace", fid));
        ok("close_workspace", Map.of("workspace", id, "delete", true));
        ok("snapshot", Map.of("delete", snap));
    }

    @Test
    void ephemeralWorkspace_leavesNothingOnDiskAfterClose() throws IOException {
        Set<Path> before = tree(home);
        JsonNode open = ok("open_workspace", Map.of());
        assertEquals("ephemeral", open.path("lifecycle").asString());
        String id = open.path("workspace").asString();
        assertEquals(0, ok("run", Map.of("workspace", id, "command", "dd if=/dev/zero of=big bs=1k count=64 2>/dev/null && ls")).path("exit_code").asInt());
        assertTrue(tree(home).stream().anyMatch(p -> p.toString().contains(id)));
        ok("close_workspace", Map.of("workspace", id));
        Set<Path> after = tree(home);
        assertTrue(after.stream().noneMatch(p -> p.toString().contains(id)), () -> "left behind: " + after.stream().filter(p -> p.toString().contains(id)).toList());
        assertTrue(before.containsAll(after), () -> "new files after close: " + after.stream().filter(p -> !before.contains(p)).toList());
    }

    /**
     * I/O limits asked through the tool: the workspace echoes them in `resources` and reports each direction in
     * `limits` (asked ones with their mechanism or why not; the others as not asked); a limit out of range is
     * refused with its range. What holds is measured inside each level by AbstractEscapeTest.
     */
    @Test
    void ioLimits_askedThroughTheTool_reportedPerDirection() throws IOException {
        String id = ok("open_workspace", Map.of("resources", Map.of("io_read_bps", 1048576, "io_write_bps", 2097152)))
                .path("workspace").asString();
        JsonNode ws = null;
        for (JsonNode w : ok("list_workspaces", Map.of()).path("workspaces")) if (w.path("workspace").asString().equals(id)) ws = w;
        assertTrue(ws != null, "not listed: " + id);
        assertEquals(1048576, ws.path("resources").path("io_read_bps").asLong());
        assertEquals(2097152, ws.path("resources").path("io_write_bps").asLong());
        assertEquals(0, ws.path("resources").path("io_read_iops").asLong());
        Map<String, JsonNode> limits = new java.util.LinkedHashMap<>();
        for (JsonNode l : ws.path("limits")) limits.put(l.path("name").asString(), l);
        assertEquals(List.of("cpu", "memory", "pids", "disk", "io_read_bps", "io_write_bps", "io_read_iops", "io_write_iops"),
                List.copyOf(limits.keySet()));
        assertEquals(1048576, limits.get("io_read_bps").path("value").asLong());
        assertEquals("bytes/s", limits.get("io_read_bps").path("unit").asString());
        assertEquals(2097152, limits.get("io_write_bps").path("value").asLong());
        for (JsonNode l : limits.values()) assertFalse(l.path("how").asString().isBlank(), l.toString());
        assertFalse(limits.get("io_write_iops").path("enforced").asBoolean(), limits.get("io_write_iops").toString());
        ok("close_workspace", Map.of("workspace", id));
        String tiny = error("open_workspace", Map.of("resources", Map.of("io_write_iops", 2)));
        assertTrue(tiny.contains("io_write_iops 2 is outside 8..1099511627776 ops/s"), tiny);
    }

    @Test
    void run_streamsProgressWhileRunning() throws IOException {
        String id = ok("open_workspace", Map.of()).path("workspace").asString();
        JsonNode r = mcp.callWithProgress("run", Map.of("workspace", id,
                "command", "for i in 1 2 3; do echo line$i; sleep 0.3; done; echo oops >&2"));
        JsonNode result = r.path("result").path("structuredContent");
        assertEquals("line1\nline2\nline3\n", result.path("stdout").asString());
        assertEquals("oops\n", result.path("stderr").asString());
        String streamed = String.join("", McpBridge.JSON.convertValue(r.path("progress"), String[].class));
        // The TS SDK runs progress handlers in a microtask, so a last notification that arrives in the same read as
        // the result can be dropped by the client; the wire order itself is checked by StdioWireTest.
        assertTrue(streamed.startsWith("line1\nline2\n"), streamed);
        assertTrue(r.path("progress").size() >= 2, "output should arrive in several notifications while it runs: " + r.path("progress"));
        ok("close_workspace", Map.of("workspace", id));
    }

    @Test
    void run_timeout_killsTreeAndSaysSo() throws IOException {
        String id = ok("open_workspace", Map.of()).path("workspace").asString();
        JsonNode r = ok("run", Map.of("workspace", id, "command", "(sleep 300 & sleep 300); echo never", "timeout_s", 1));
        assertTrue(r.path("timed_out").asBoolean(), r.toString());
        assertEquals(137, r.path("exit_code").asInt());
        assertFalse(r.path("stdout").asString().contains("never"));
        JsonNode ps = ok("run", Map.of("workspace", id, "command", "ps -eo comm | grep -c '^sleep' || true"));
        assertEquals("0", ps.path("stdout").asString().strip(), "sleep processes survived the timeout");
        ok("close_workspace", Map.of("workspace", id));
    }

    @Test
    void run_largeOutput_keepsHeadAndTailAndCountsAll() throws IOException {
        String id = ok("open_workspace", Map.of()).path("workspace").asString();
        JsonNode r = ok("run", Map.of("workspace", id, "command", "echo START; head -c 3000000 /dev/zero | tr '\\0' x; echo; echo END",
                "max_output_bytes", 4096));
        assertTrue(r.path("stdout_truncated").asBoolean());
        assertEquals(3000011, r.path("stdout_bytes").asLong());
        assertTrue(r.path("stdout").asString().startsWith("START\n"));
        assertTrue(r.path("stdout").asString().endsWith("END\n"));
        ok("close_workspace", Map.of("workspace", id));
    }

    @Test
    void badInput_getsClearToolErrorsAndChangesNothing() throws IOException {
        String id = ok("open_workspace", Map.of()).path("workspace").asString();
        ok("run", Map.of("workspace", id, "command", "echo keep > keep.txt"));
        List<List<Object>> cases = List.of(
                List.of("run", Map.of("workspace", "no-such-ws", "command", "true"), "no workspace 'no-such-ws'"),
                List.of("run", Map.of("workspace", id), "command"),
                List.of("run", Map.of("command", "true"), "workspace"),
                List.of("run", Map.of("workspace", id, "command", "true", "timeout_s", "ten"), "timeout_s"),
                List.of("run", Map.of("workspace", id, "command", "true", "timeout_s", 0), "timeout_s"),
                List.of("run", Map.of("workspace", id, "command", "true", "cwd", "/no/such/dir"), "cwd '/no/such/dir'"),
                List.of("run", Map.of("workspace", id, "command", "true", "env", Map.of("HTTP_PROXY", "http://evil")), "HTTP_PROXY"),
                List.of("run", Map.of("workspace", id, "command", "true", "bogus", 1), "bogus"),
                List.of("park", Map.of("workspace", 42), "workspace"),
                List.of("open_workspace", Map.of("lifecycle", "forever"), "lifecycle"),
                List.of("open_workspace", Map.of("name", "../etc"), "name"),
                List.of("open_workspace", Map.of("from_snapshot", "snap-nope"), "no snapshot 'snap-nope'"),
                List.of("open_workspace", Map.of("isolation", "firecracker"), "isolation"),
                List.of("snapshot", Map.of("workspace", "nope"), "no workspace 'nope'"),
                List.of("close_workspace", Map.of("workspace", "nope"), "no workspace 'nope'"));
        for (List<Object> c : cases) {
            @SuppressWarnings("unchecked") Map<String, Object> args = (Map<String, Object>) c.get(1);
            String msg = error((String) c.get(0), args);
            assertTrue(msg.contains((String) c.get(2)), c.get(0) + " " + args + " -> " + msg);
        }
        assertEquals("keep\n", ok("run", Map.of("workspace", id, "command", "cat keep.txt")).path("stdout").asString());
        ok("close_workspace", Map.of("workspace", id));
        String closed = error("park", Map.of("workspace", id));
        assertTrue(closed.contains("no workspace"), closed);
    }

    @Test
    void run_concurrentCallsInOneWorkspace_allComplete() throws Exception {
        String id = ok("open_workspace", Map.of()).path("workspace").asString();
        // one client sending several requests at once, as agents with parallel tool calls do
        List<Map<String, Object>> calls = new java.util.ArrayList<>();
        for (int i = 1; i <= 6; i++) {
            // each run waits until all six have started: only concurrent execution lets any of them finish
            calls.add(Map.of("name", "run", "args", Map.of("workspace", id, "timeout_s", 60, "command",
                    "touch started" + i + "; while [ $(ls started* | wc -l) -lt 6 ]; do sleep 0.05; done; echo done" + i)));
        }
        JsonNode r = mcp.send(Map.of("op", "parallel", "calls", calls));
        assertTrue(r.path("ok").asBoolean(), r.toString());
        for (int i = 1; i <= 6; i++) {
            JsonNode one = r.path("results").get(i - 1);
            assertFalse(one.path("isError").asBoolean(), one.toString());
            assertEquals("done" + i + "\n", one.path("structuredContent").path("stdout").asString());
        }
        ok("close_workspace", Map.of("workspace", id));
    }

    @Test
    void files_textAndBinaryRoundTripAndListing() throws IOException {
        String id = ok("open_workspace", Map.of()).path("workspace").asString();
        JsonNode w = ok("write_file", Map.of("workspace", id, "path", "docs/readme.md", "content", "# Hi ünïcode\n"));
        assertEquals("/workspace/docs/readme.md", w.path("path").asString());
        assertEquals("# Hi ünïcode\n".getBytes(java.nio.charset.StandardCharsets.UTF_8).length, w.path("bytes_written").asInt());
        JsonNode r = ok("read_file", Map.of("workspace", id, "path", "/workspace/docs/readme.md"));
        assertEquals("utf-8", r.path("encoding").asString());
        assertEquals("# Hi ünïcode\n", r.path("content").asString());
        assertEquals("0644", r.path("mode").asString());

        byte[] bin = new byte[70000];
        for (int i = 0; i < bin.length; i++) bin[i] = (byte) (i * 31);
        String b64 = java.util.Base64.getEncoder().encodeToString(bin);
        ok("write_file", Map.of("workspace", id, "path", "bin/blob", "content", b64, "encoding", "base64", "mode", "0755"));
        JsonNode rb = ok("read_file", Map.of("workspace", id, "path", "bin/blob"));
        assertEquals("base64", rb.path("encoding").asString());
        assertEquals(b64, rb.path("content").asString());
        assertEquals("0755", rb.path("mode").asString());
        JsonNode part = ok("read_file", Map.of("workspace", id, "path", "bin/blob", "offset", 100, "max_bytes", 1000));
        assertTrue(part.path("truncated").asBoolean());
        assertEquals(1000, part.path("bytes").asInt());
        assertEquals(70000, part.path("size").asInt());
        // the command line sees what the file tools wrote, and the other way round
        assertEquals(sha256(bin) + "\n", ok("run", Map.of("workspace", id, "command", "sha256sum bin/blob | cut -d' ' -f1")).path("stdout").asString());
        ok("write_file", Map.of("workspace", id, "path", "docs/readme.md", "content", "more\n", "append", true));
        assertEquals("# Hi ünïcode\nmore\n", ok("read_file", Map.of("workspace", id, "path", "docs/readme.md")).path("content").asString());

        JsonNode l = ok("list_files", Map.of("workspace", id));
        assertEquals("/workspace", l.path("path").asString());
        // (a microVM's /workspace is its own ext4 disk, with the file system's lost+found)
        assertEquals(List.of("bin", "docs"), l.path("entries").findValues("name").stream().map(JsonNode::asString)
                .filter(n -> !n.equals("lost+found")).toList());
        assertEquals("dir", l.path("entries").get(0).path("type").asString());

        String missing = error("read_file", Map.of("workspace", id, "path", "nope.txt"));
        assertTrue(missing.contains("/workspace/nope.txt") && missing.contains("list_files"), missing);
        String dir = error("read_file", Map.of("workspace", id, "path", "docs"));
        assertTrue(dir.contains("/workspace/docs"), dir);
        // (a microVM's root is its own writable file system; /proc refuses new files on every driver)
        String ro = error("write_file", Map.of("workspace", id, "path", "/proc/berth-evil", "content", "x"));
        assertTrue(ro.contains("/proc/berth-evil"), ro);
        String badB64 = error("write_file", Map.of("workspace", id, "path", "x", "content", "***", "encoding", "base64"));
        assertTrue(badB64.contains("base64"), badB64);
        // ".." cannot climb out of the sandbox: it names the sandbox's own /etc/passwd, which has no host accounts
        JsonNode up = ok("read_file", Map.of("workspace", id, "path", "../../../../etc/passwd"));
        assertEquals("/etc/passwd", up.path("path").asString());
        assertFalse(up.path("content").asString().contains(System.getProperty("user.name").equals("root") ? "daemon:" : System.getProperty("user.name")));
        ok("close_workspace", Map.of("workspace", id));
    }

    @Test
    void backgroundProcess_followedAndStopped() throws IOException {
        String id = ok("open_workspace", Map.of()).path("workspace").asString();
        JsonNode started = ok("run", Map.of("workspace", id, "background", true,
                "command", "for i in 1 2 3; do echo tick$i; sleep 0.3; done; echo bye >&2; exit 3"));
        String p = started.path("process").asString();
        assertTrue(p.startsWith("p-"), started.toString());
        StringBuilder out = new StringBuilder();
        JsonNode st = started;
        for (int i = 0; i < 40 && (st.path("running").asBoolean() || out.isEmpty()); i++) {
            st = ok("run", Map.of("workspace", id, "process", p, "wait_s", 5));
            out.append(st.path("stdout").asString());
        }
        assertFalse(st.path("running").asBoolean(), st.toString());
        assertEquals(3, st.path("exit_code").asInt());
        assertEquals("tick1\ntick2\ntick3\n", out.toString());
        // offsets let a reader start over
        JsonNode again = ok("run", Map.of("workspace", id, "process", p, "since_stdout", 0, "since_stderr", 0));
        assertEquals("tick1\ntick2\ntick3\n", again.path("stdout").asString());
        assertEquals("bye\n", again.path("stderr").asString());

        String server = ok("run", Map.of("workspace", id, "background", true, "command", "sleep 300")).path("process").asString();
        JsonNode stopped = ok("run", Map.of("workspace", id, "process", server, "signal", "TERM", "wait_s", 10));
        assertFalse(stopped.path("running").asBoolean(), stopped.toString());
        assertEquals(143, stopped.path("exit_code").asInt());
        assertEquals("0", ok("run", Map.of("workspace", id, "command", "ps -eo comm | grep -c '^sleep' || true")).path("stdout").asString().strip());

        String unknown = error("run", Map.of("workspace", id, "process", "p-0000000000"));
        assertTrue(unknown.contains("no background process 'p-0000000000'"), unknown);
        String both = error("run", Map.of("workspace", id, "process", server, "command", "true"));
        assertTrue(both.contains("not both"), both);
        ok("close_workspace", Map.of("workspace", id));
    }

    @Test
    void run_changingAgentConfig_isReportedAndRecorded() throws IOException {
        String id = ok("open_workspace", Map.of()).path("workspace").asString();
        JsonNode quiet = ok("run", Map.of("workspace", id, "command", "mkdir -p repo/.git/hooks && echo code > repo/main.c"));
        assertEquals(0, quiet.path("agent_config_changes").size(), quiet.toString());
        // what a hostile postinstall hook does
        JsonNode hook = ok("run", Map.of("workspace", id, "command",
                "mkdir -p .claude && echo '{\"hooks\":{}}' > .claude/settings.json && printf '#!/bin/sh\\ncurl evil\\n' > repo/.git/hooks/pre-commit"));
        List<String> seen = new java.util.ArrayList<>();
        hook.path("agent_config_changes").forEach(c -> seen.add(c.path("change").asString() + " " + c.path("path").asString()));
        assertEquals(List.of("created /workspace/.claude/settings.json", "created /workspace/repo/.git/hooks/pre-commit"), seen.stream().sorted().toList());
        assertTrue(hook.path("note").asString().contains("agent configuration"), hook.toString());
        JsonNode edit = ok("run", Map.of("workspace", id, "command", "echo '{\"hooks\":{\"x\":1}}' > .claude/settings.json"));
        assertEquals("modified", edit.path("agent_config_changes").get(0).path("change").asString());
        String audit = Files.readString(home.resolve("audit/tenant.local.log")); // guard findings are in the tenant's chain
        assertTrue(audit.contains("\"type\":\"guard_finding\"") && audit.contains("\"path\":\"/workspace/.claude/settings.json\"")
                && audit.contains(id), audit);
        ok("close_workspace", Map.of("workspace", id));
    }

    static String sha256(byte[] b) {
        try {
            return java.util.HexFormat.of().formatHex(java.security.MessageDigest.getInstance("SHA-256").digest(b));
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    static Set<Path> tree(Path root) throws IOException {
        try (Stream<Path> s = Files.walk(root)) {
            return new HashSet<>(s.toList());
        }
    }
}
