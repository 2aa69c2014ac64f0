package dev.berth.mcp;

import dev.berth.engine.api.EgressDenial;
import dev.berth.engine.api.EgressFiltered;
import dev.berth.engine.api.RunResult;
import dev.berth.mcp.tools.Results;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Issue 16, finding 3: hostile code must not be able to erase a run's result. A denial that names no host (a bare
 * GET to the proxy, a bad CONNECT port, an HTTP/2 preface, a header timeout) used to make the whole run result break
 * its output schema, so the agent lost stdout, the exit code and the egress_denied list.
 */
class RunResultSchemaTest {
    @Test
    void runResult_withHostlessDenial_isValidAgainstTheRunOutputSchema() {
        RunResult r = new RunResult("ws-1", 7, 0, "out", "err", 3, 3, false, false, 12, false, false, null, List.of(),
                List.of(new EgressDenial(null, 0, "request target '/' is not absolute-form (a proxy needs http://host/...)", 1),
                        new EgressDenial("denied.test", 80, "host 'denied.test' matches no allowlist entry", 2)),
                List.of(), null, null, null, null, null, null, null);
        SchemaCheck.assertValid("run", McpBridge.JSON.valueToTree(Results.run(r)));
    }

    @Test
    void runResult_withFilteredRegistryMetadata_isValidAgainstTheRunOutputSchema() {
        RunResult r = new RunResult("ws-1", 0, 0, "", "", 0, 0, false, false, 12, false, false, null, List.of(), List.of(),
                List.of(), null, null, null, null, null, null, null,
                List.of(new EgressFiltered("registry.npmjs.org", 443, "hid 1 version(s) of leftish from the npm metadata: leftish@1.1.0 was "
                        + "published 2026-11-30T10:00:00Z, less than 7 days ago (registryRules.npm.minReleaseAgeDays)", 1)));
        var tree = McpBridge.JSON.valueToTree(Results.run(r));
        SchemaCheck.assertValid("run", tree);
        org.junit.jupiter.api.Assertions.assertEquals("registry.npmjs.org", tree.get("egress_filtered").get(0).get("host").asString());
    }

    @Test
    void runResult_withStoppedProcesses_isValidAndListsThem() {
        RunResult r = new RunResult("ws-1", 0, 0, "started\n", "", 8, 0, false, false, 12, false, false,
                "1 process(es) the command started were still running when it ended and were stopped", List.of(), List.of(),
                List.of(), null, null, null, null, null, null, null, List.of(),
                List.of(new RunResult.StoppedProcess(7, "npm run dev"), new RunResult.StoppedProcess(9, "[node]")));
        var tree = McpBridge.JSON.valueToTree(Results.run(r));
        SchemaCheck.assertValid("run", tree);
        org.junit.jupiter.api.Assertions.assertEquals("npm run dev", tree.get("stopped_processes").get(0).get("command").asString());
        var none = McpBridge.JSON.valueToTree(Results.run(new RunResult("ws-1", 0, 0, "", "", 0, 0, false, false, 1, false, false,
                null, List.of(), List.of(), List.of(), null, null, null, null, null, null, null)));
        org.junit.jupiter.api.Assertions.assertFalse(none.has("stopped_processes"), "absent when none: " + none);
    }

    @Test
    void processStatus_ofATerminalProcess_carriesItsScreen_andIsValid() {
        var p = new dev.berth.engine.api.ProcessStatus("p-0123456789", "ws-1", 7, "python3 -q", true, null, 0, false,
                ">>> 6*7\r\n42\r\n>>> ", "", 0, 20, 0, 0, 0, 0, 30, null, ">>> 6*7\n42\n>>>");
        var tree = McpBridge.JSON.valueToTree(Results.process(p));
        SchemaCheck.assertValid("run", tree);
        org.junit.jupiter.api.Assertions.assertEquals(">>> 6*7\n42\n>>>", tree.get("screen").asString());
        var pipes = McpBridge.JSON.valueToTree(Results.process(new dev.berth.engine.api.ProcessStatus("p-0123456789", "ws-1", 7,
                "sleep 9", true, null, 0, false, "", "", 0, 0, 0, 0, 0, 0, 30, null)));
        org.junit.jupiter.api.Assertions.assertFalse(pipes.has("screen"), "no screen for a process on pipes: " + pipes);
    }
}
