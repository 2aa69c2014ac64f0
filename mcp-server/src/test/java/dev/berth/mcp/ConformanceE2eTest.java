package dev.berth.mcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The official MCP conformance suite ({@code @modelcontextprotocol/conformance}, Node 22) against {@code berth http}.
 * Every server scenario the suite lists is either run here and must pass, or skipped with the reason it does not
 * apply to Berth (most scenarios call the suite's own fixture tools, resources and prompts, which a real server
 * does not have). A scenario added by a new suite version fails this test until someone classifies it.
 *
 * <p>The suite cannot send credentials, so it talks to berth through a loopback proxy that adds a bearer token and
 * forwards everything else untouched (Host and Origin included); berth itself stays fully authenticated.
 */
class ConformanceE2eTest {
    /** Scenarios that apply to any MCP server with tools over Streamable HTTP. */
    static final List<String> APPLICABLE = List.of("server-initialize", "ping", "tools-list", "logging-set-level",
            "server-sse-multiple-streams", "dns-rebinding-protection");

    static final Map<String, String> SKIPPED = new LinkedHashMap<>();

    static {
        String fixtureTool = "calls the suite's fixture tool (test_*); Berth exposes only its workspace tools";
        for (String s : List.of("tools-call-simple-text", "tools-call-image", "tools-call-audio", "tools-call-embedded-resource",
                "tools-call-mixed-content", "tools-call-with-logging", "tools-call-error", "tools-call-with-progress",
                "tools-call-sampling", "tools-call-elicitation", "elicitation-sep1034-defaults", "elicitation-sep1330-enums")) {
            SKIPPED.put(s, fixtureTool);
        }
        SKIPPED.put("json-schema-2020-12", "needs the suite's fixture tool json_schema_2020_12_tool (Berth's own 2020-12 schemas are checked by SchemaCheck)");
        SKIPPED.put("server-sse-polling", "pending in the suite (not in its active set); exercises SSE resumption (SEP-1699) through a fixture tool");
        SKIPPED.put("completion-complete", "Berth declares no completions capability");
        for (String s : List.of("resources-list", "resources-read-text", "resources-read-binary", "resources-templates-read",
                "resources-subscribe", "resources-unsubscribe")) {
            SKIPPED.put(s, "Berth declares no resources capability");
        }
        for (String s : List.of("prompts-list", "prompts-get-simple", "prompts-get-with-args", "prompts-get-embedded-resource",
                "prompts-get-with-image")) {
            SKIPPED.put(s, "Berth declares no prompts capability");
        }
    }

    @Test
    void everyApplicableServerScenarioPasses(@TempDir Path dir) throws Exception {
        Node22.requireInstalled();
        Path home = Files.createDirectories(dir.resolve("node-home"));
        List<String> listed = listServerScenarios(home);
        List<String> unclassified = listed.stream().filter(s -> !APPLICABLE.contains(s) && !SKIPPED.containsKey(s)).toList();
        assertTrue(unclassified.isEmpty(), "new conformance scenarios: decide whether they apply to Berth: " + unclassified);
        for (String s : APPLICABLE) assertTrue(listed.contains(s), "the suite no longer lists '" + s + "': " + listed);

        try (BerthHttp berth = BerthHttp.start(dir, """
                {"auth": {"tokens": [{"tenant": "conformance", "sha256": "%s"}]}, "tenants": {"conformance": {}}}
                """.formatted(BearerAuthenticatorTest.sha256("conformance-token")))) {
            int proxyPort = BerthHttp.freePort();
            Process proxy = new ProcessBuilder(List.of(Node22.NODE.toString(), Node22.DIR.resolve("auth-proxy.mjs").toString(),
                    String.valueOf(proxyPort), String.valueOf(berth.port), "conformance-token"))
                    .redirectErrorStream(true).start();
            try {
                String first = new BufferedReader(new InputStreamReader(proxy.getInputStream(), StandardCharsets.UTF_8)).readLine();
                assertTrue(first != null && first.startsWith("auth-proxy listening"), "proxy did not start: " + first);
                Map<String, String> results = new LinkedHashMap<>();
                List<String> failures = new ArrayList<>();
                for (String scenario : APPLICABLE) {
                    Node22.Result r = Node22.run(Node22.script("@modelcontextprotocol/conformance/dist/index.js", "server",
                            "--url", "http://127.0.0.1:" + proxyPort + "/mcp", "--scenario", scenario,
                            "-o", dir.resolve("results").toString()), home, 120);
                    String all = r.stdout() + r.stderr();
                    Matcher m = Pattern.compile("Passed: (\\d+)/(\\d+), (\\d+) failed").matcher(all);
                    String line = m.find() ? m.group() : "no result line";
                    boolean ok = r.exit() == 0 && m.group(3) != null && "0".equals(m.group(3)) && !"0".equals(m.group(1));
                    results.put(scenario, (ok ? "PASS  " : "FAIL  ") + line);
                    if (!ok) failures.add(scenario + " (exit " + r.exit() + "):\n" + all);
                }
                StringBuilder report = new StringBuilder("conformance scenarios (@modelcontextprotocol/conformance):\n");
                results.forEach((s, r) -> report.append("  ").append(String.format("%-32s", s)).append(r).append('\n'));
                SKIPPED.forEach((s, why) -> report.append("  ").append(String.format("%-32s", s)).append("SKIP  ").append(why).append('\n'));
                System.out.println(report);
                if (!failures.isEmpty()) fail(report + "\n" + String.join("\n\n", failures));
            } finally {
                proxy.destroy();
            }
        }
        HomeLeaks.assertNone(dir); // the server stopped: nothing of it is left under its home
    }

    static List<String> listServerScenarios(Path home) throws Exception {
        Node22.Result r = Node22.run(Node22.script("@modelcontextprotocol/conformance/dist/index.js", "list", "--server"), home, 60);
        assertEquals(0, r.exit(), r.stderr());
        List<String> names = new ArrayList<>();
        Matcher m = Pattern.compile("(?m)^\\s+- ([a-z0-9-]+)").matcher(r.stdout());
        while (m.find()) names.add(m.group(1));
        assertFalse(names.isEmpty(), "no scenarios listed: " + r.stdout());
        return names;
    }
}
