package dev.berth.mcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.hawkular.agent.prometheus.text.TextPrometheusMetricsProcessor;
import org.hawkular.agent.prometheus.types.Counter;
import org.hawkular.agent.prometheus.types.Gauge;
import org.hawkular.agent.prometheus.types.Histogram;
import org.hawkular.agent.prometheus.types.MetricFamily;
import org.hawkular.agent.prometheus.walkers.CollectorPrometheusMetricsWalker;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import tools.jackson.databind.JsonNode;

/**
 * Evidence through the real surface: {@code berth http} driven by the official TypeScript MCP client. Run results
 * carry a receipt that the schema accepts and {@code berth audit receipt} verifies; one tenant reaches nothing of
 * another's records through any tool; {@code /metrics} answers only the operator's token and parses with a real
 * Prometheus text-format parser (Hawkular's); {@code berth audit verify} and {@code export} read the live home.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class EvidenceE2eTest {
    static final String SCRAPE = "operator-scrape-token";
    Path dir;
    BerthHttp server;
    final HttpClient http = HttpClient.newHttpClient();

    @BeforeAll
    void start() throws Exception {
        dir = Files.createTempDirectory("berth-evidence-e2e-");
        server = BerthHttp.start(dir, """
                {"auth": {"tokens": [{"tenant": "alice", "sha256": "%s"}, {"tenant": "bob", "sha256": "%s"}]},
                 "tenants": {"alice": {}, "bob": {}},
                 "metrics": {"token_sha256": "%s"},
                 "egress": {"presets": ["npm"]}}
                """.formatted(BearerAuthenticatorTest.sha256("alice-token"), BearerAuthenticatorTest.sha256("bob-token"),
                BearerAuthenticatorTest.sha256(SCRAPE)));
    }

    @AfterAll
    void stop() throws Exception {
        server.close();
        boolean clean = server.stoppedCleanly();
        System.out.println(server.log());
        assertTrue(clean, "berth http (JSON logs on) must still say it stopped cleanly on SIGTERM");
        var v = berth("audit", "verify", "--home", server.home.toString());
        assertEquals(0, v.code(), "after shutdown every chain verifies: " + v.out());
        HomeLeaks.assertNone(dir); // a leak is named here, before the delete
        dev.berth.engine.spi.Trees.delete(dir);
    }

    McpBridge client(String token) throws Exception {
        McpBridge b = McpBridge.http(server.url("/mcp"), token);
        b.connect();
        return b;
    }

    record Cli(int code, String out) {}

    Cli berth(String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(McpBridge.javaBin(), "-jar", McpBridge.JAR.toString()));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS));
        return new Cli(p.exitValue(), out);
    }

    @Test
    void runReceipt_validatesAndVerifies_andOneAlteredByteFails() throws Exception {
        JsonNode r;
        try (McpBridge alice = client("alice-token")) {
            String ws = HttpE2eTest.ok(alice, "open_workspace", Map.of()).path("workspace").asString();
            r = HttpE2eTest.ok(alice, "run", Map.of("workspace", ws, "command", "echo receipt-me"));
        }
        JsonNode receipt = r.path("receipt");
        assertEquals(r.path("run_id").asString(), receipt.path("run").asString());
        assertEquals("alice", receipt.path("tenant").asString());
        assertEquals("tenant:alice", receipt.path("audit").path("log").asString());
        Path f = dir.resolve("receipt.json");
        Files.writeString(f, r.toString()); // the whole run result: the CLI finds the receipt in it
        Cli ok = berth("audit", "receipt", f.toString(), "--home", server.home.toString());
        assertEquals(0, ok.code(), ok.out());
        assertTrue(ok.out().contains("signature: valid") && ok.out().contains("chain: valid"), ok.out());

        Files.writeString(f, receipt.toString().replace("\"exit_code\":0", "\"exit_code\":1"));
        Cli bad = berth("audit", "receipt", f.toString(), "--home", server.home.toString());
        assertEquals(1, bad.code(), bad.out());
        assertTrue(bad.out().contains("signature: INVALID"), bad.out());
    }

    @Test
    void aTenant_cannotReachAnotherTenantsRecordsThroughAnyTool() throws Exception {
        String aliceRun;
        String aliceWs;
        try (McpBridge alice = client("alice-token")) {
            aliceWs = HttpE2eTest.ok(alice, "open_workspace", Map.of("name", "private")).path("workspace").asString();
            aliceRun = HttpE2eTest.ok(alice, "run", Map.of("workspace", aliceWs, "command", "echo alice-secret-work")).path("run_id").asString();
        }
        Path aliceLog = server.home.resolve("audit").resolve("tenant.alice.log");
        assertTrue(Files.readString(aliceLog).contains(aliceRun));
        try (McpBridge bob = client("bob-token")) {
            String ws = HttpE2eTest.ok(bob, "open_workspace", Map.of()).path("workspace").asString();
            List<String> seen = new ArrayList<>();
            // every tool bob has, aimed at alice's workspace, her log, and the audit folder
            seen.add(HttpE2eTest.toolError(bob, "read_file", Map.of("workspace", aliceWs, "path", "x")));
            seen.add(HttpE2eTest.toolError(bob, "run", Map.of("workspace", aliceWs, "command", "true")));
            seen.add(HttpE2eTest.toolError(bob, "read_file", Map.of("workspace", ws, "path", aliceLog.toString())));
            seen.add(bob.call("read_file", Map.of("workspace", ws, "path", "../../" + aliceLog)).toString());
            seen.add(HttpE2eTest.ok(bob, "run", Map.of("workspace", ws, "command",
                    "cat " + aliceLog + " " + server.home.resolve("audit") + "/* 2>&1; ls -R / 2>/dev/null | grep -c tenant.alice; true")).toString());
            seen.add(bob.call("list_files", Map.of("workspace", ws, "path", server.home.resolve("audit").toString())).toString());
            seen.add(HttpE2eTest.ok(bob, "list_workspaces", Map.of()).toString());
            seen.add(bob.call("snapshot", Map.of("workspace", aliceWs)).toString());
            seen.add(bob.call("park", Map.of("workspace", aliceWs)).toString());
            seen.add(bob.call("close_workspace", Map.of("workspace", aliceWs, "delete", true)).toString());
            for (String s : seen) {
                assertFalse(s.contains(aliceRun) || s.contains("alice-secret-work") || s.contains("\"type\":\"run\""), s);
            }
        }
        assertFalse(Files.readString(server.home.resolve("audit").resolve("tenant.bob.log")).contains("alice-secret-work"));
    }

    @Test
    void metrics_answerOnlyTheOperatorsToken_andParseAsPrometheusText() throws Exception {
        try (McpBridge alice = client("alice-token")) {
            String ws = HttpE2eTest.ok(alice, "open_workspace", Map.of()).path("workspace").asString();
            HttpE2eTest.ok(alice, "run", Map.of("workspace", ws, "command", "wget -q -O- http://metrics-denied.example/ ; true"));
            HttpE2eTest.ok(alice, "close_workspace", Map.of("workspace", ws));
        }
        assertEquals(401, scrape(null).statusCode());
        assertEquals(401, scrape("alice-token").statusCode(), "a tenant's token does not open the operator's metrics");
        HttpResponse<String> resp = scrape(SCRAPE);
        assertEquals(200, resp.statusCode(), resp.body());
        assertTrue(resp.headers().firstValue("Content-Type").orElse("").startsWith("text/plain"));

        var walker = new CollectorPrometheusMetricsWalker();
        new TextPrometheusMetricsProcessor(new ByteArrayInputStream(resp.body().getBytes(StandardCharsets.UTF_8)), walker).walk();
        Map<String, MetricFamily> byName = new java.util.HashMap<>();
        for (MetricFamily f : walker.getAllMetricFamilies()) byName.put(f.getName(), f);

        Histogram runs = (Histogram) byName.get("berth_runs_seconds").getMetrics().stream()
                .filter(m -> "exit_0".equals(m.getLabels().get("outcome")) && "namespace".equals(m.getLabels().get("isolation")))
                .findFirst().orElseThrow(() -> new AssertionError("no berth_runs_seconds{outcome=exit_0}: " + byName.keySet()));
        assertTrue(runs.getSampleCount() >= 1 && !runs.getBuckets().isEmpty(), "a duration histogram with buckets");
        assertTrue(byName.get("berth_workspace_operations_seconds").getMetrics().stream()
                .anyMatch(m -> "open".equals(m.getLabels().get("op")) && ((Histogram) m).getSampleCount() >= 1));
        assertTrue(byName.get("berth_workspace_operations_seconds").getMetrics().stream()
                .anyMatch(m -> "close".equals(m.getLabels().get("op"))));
        double denied = byName.get("berth_egress_decisions_total").getMetrics().stream()
                .filter(m -> "deny".equals(m.getLabels().get("decision")) && "policy".equals(m.getLabels().get("reason")))
                .mapToDouble(m -> ((Counter) m).getValue()).sum();
        assertTrue(denied >= 1, "the refused wget is counted as a policy denial: " + byName.get("berth_egress_decisions_total").getMetrics());
        assertTrue(byName.get("berth_workspaces").getMetrics().stream().allMatch(m -> m instanceof Gauge
                && m.getLabels().containsKey("state") && m.getLabels().containsKey("isolation")));
        assertTrue(byName.containsKey("berth_sandboxes") && byName.containsKey("berth_qemu_processes") && byName.containsKey("jvm_memory_used_bytes"),
                byName.keySet().toString());
    }

    HttpResponse<String> scrape(String token) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(server.url("/metrics"))).GET();
        if (token != null) b.header("Authorization", "Bearer " + token);
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void serverLog_isJsonLines() {
        long json = server.log().lines().filter(l -> l.startsWith("{\"time\":")).count();
        assertTrue(json >= 1, "berth http writes its own events as JSON lines: " + server.log());
        server.log().lines().filter(l -> l.startsWith("{")).forEach(l ->
                assertTrue(McpBridge.JSON.readTree(l).has("level"), l));
    }

    /** The CLI reads the live home while the server appends to it: the chains verify, the export has the caller. */
    @Test
    void auditVerifyAndExport_ofTheLiveHome_areIntact() throws Exception {
        try (McpBridge alice = client("alice-token")) {
            String ws = HttpE2eTest.ok(alice, "open_workspace", Map.of()).path("workspace").asString();
            HttpE2eTest.ok(alice, "run", Map.of("workspace", ws, "command", "true"));
        }
        Cli v = berth("audit", "verify", "--home", server.home.toString());
        assertEquals(0, v.code(), v.out());
        assertTrue(v.out().contains("tenant:alice") && v.out().contains("intact"), v.out());
        Cli export = berth("audit", "export", "--tenant", "alice", "--type", "tool_call", "--home", server.home.toString());
        assertEquals(0, export.code(), export.out());
        assertTrue(export.out().contains("\"transport\":\"streamable-http\"") && export.out().contains("\"tenant\":\"alice\""), export.out());
    }
}
