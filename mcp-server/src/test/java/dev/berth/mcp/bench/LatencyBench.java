package dev.berth.mcp.bench;

import io.modelcontextprotocol.client.McpClient;
import io.modelcontextprotocol.client.McpSyncClient;
import io.modelcontextprotocol.client.transport.ServerParameters;
import io.modelcontextprotocol.client.transport.StdioClientTransport;
import io.modelcontextprotocol.json.jackson3.JacksonMcpJsonMapper;
import io.modelcontextprotocol.spec.McpSchema;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Benchmark (prints figures, asserts nothing): latency of open_workspace -> first run("true") and of run("true")
 * round trips through MCP stdio (MCP Java SDK client -> berth.jar), next to bare `bwrap ... true` with the same
 * namespaces and mounts, measured interleaved in the same run (each round starts bare bwrap a few times, then makes
 * its MCP calls, so both see the same load), and where one run's time went on the server, phase by phase
 * ({@code dev.berth.engine.metrics.CallPhases}, read from the file the server writes with {@code -Dberth.phases}).
 * Writes the figures as JSON when {@code -Dberth.bench.json=FILE} is set. Usage: {@code bench/run-latency.sh
 * [iterations] [namespace|microvm] [operator-config]}; {@code RunLatencyRatioE2eTest} runs a short pass of the same
 * measurement ({@link #measure}) and compares its ratios with the committed baseline.
 */
public final class LatencyBench {
    public static final JsonMapper JSON = JsonMapper.builder().build();

    /** How much to measure: {@code rounds} rounds of {@code bare} bare starts and {@code runs} runs; {@code opens} opens. */
    public record Plan(int rounds, int bare, int runs, int opens, int warmRuns) {
        public static Plan forIterations(int n) {
            int rounds = Math.max(5, n / 20);
            return new Plan(rounds, Math.max(4, n / 4 / rounds), Math.max(1, n / rounds), 5, 20);
        }
    }

    /**
     * One measurement. Ratios are to bare bwrap's p50 of the same run; {@code runRoundRatio} is the median over
     * rounds of (run p50 / bare p50) within the round, the figure least moved by load that comes and goes.
     */
    public record Result(String isolation, String config, double bareP50, double bareP99, double openP50, double openP99,
                         double runP50, double runP99, double runRatio, double openRatio, double runRoundRatio,
                         double openRoundRatio, int bareCount, int runCount, int openCount,
                         Map<String, Double> phasesP50us, double phasesTotalP50us, double serverP50us) {

        public Map<String, Object> toJson() {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("benchmark", "run-latency");
            m.put("measured_at", Instant.now().toString());
            m.put("isolation", isolation);
            if (config != null) m.put("config", config);
            m.put("load_average", loadAverage());
            m.put("bare_bwrap", Map.of("count", bareCount, "p50_ms", round(bareP50), "p99_ms", round(bareP99)));
            m.put("open_first_run", Map.of("count", openCount, "p50_ms", round(openP50), "p99_ms", round(openP99),
                    "ratio_to_bare", round(openRatio), "median_round_ratio", round(openRoundRatio)));
            m.put("run_true", Map.of("count", runCount, "p50_ms", round(runP50), "p99_ms", round(runP99),
                    "ratio_to_bare", round(runRatio), "median_round_ratio", round(runRoundRatio)));
            Map<String, Object> phases = new LinkedHashMap<>();
            phasesP50us.forEach((k, v) -> phases.put(k, round(v)));
            m.put("run_phases_p50_us", phases);
            m.put("run_in_handler_p50_us", round(phasesTotalP50us));
            m.put("run_in_server_p50_us", round(serverP50us));
            return m;
        }
    }

    public static void main(String[] args) throws Exception {
        Path jar = Path.of(args[0]);
        int n = args.length > 1 ? Integer.parseInt(args[1]) : 200;
        String isolation = args.length > 2 ? args[2] : "namespace";
        String extra = args.length > 3 ? args[3] : null; // an operator config, e.g. to switch the guard off
        Result r = measure(jar, isolation, extra, Plan.forIterations(n));
        print(r);
        String out = System.getProperty("berth.bench.json");
        if (out != null) {
            Path p = Path.of(out);
            if (p.getParent() != null) Files.createDirectories(p.getParent());
            Files.writeString(p, JSON.writerWithDefaultPrettyPrinter().writeValueAsString(r.toJson()) + "\n");
            System.out.println("figures written to " + p);
        }
        System.exit(0);
    }

    static void print(Result r) {
        System.out.printf("%-50s %9s %9s %9s %11s%n", r.isolation() + " driver" + (r.config() == null ? "" : " (" + r.config() + ")"),
                "p50 ms", "p99 ms", "vs bwrap", "round med.");
        System.out.printf("%-50s %9.2f %9.2f %9s%n", "bare `bwrap ... true` (" + r.bareCount() + "x, interleaved)", r.bareP50(), r.bareP99(), "1.00x");
        System.out.printf("%-50s %9.2f %9.2f %8.2fx %10.2fx%n", "MCP open_workspace + first run(true) (" + r.openCount() + "x)",
                r.openP50(), r.openP99(), r.openRatio(), r.openRoundRatio());
        System.out.printf("%-50s %9.2f %9.2f %8.2fx %10.2fx%n", "MCP run(true) round trip (" + r.runCount() + "x)",
                r.runP50(), r.runP99(), r.runRatio(), r.runRoundRatio());
        if (r.phasesP50us().isEmpty()) return;
        System.out.printf("%nwhere a run(true) goes on the server (median of each phase over the timed runs, us; in order):%n");
        r.phasesP50us().forEach((k, v) -> System.out.printf("  %-36s %9.0f%n", k, v));
        System.out.printf("  %-36s %9.0f   (median of the handler's totals)%n", "= in the tool handler", r.phasesTotalP50us());
        System.out.printf("  %-36s %9.0f   (server p50 - handler p50: JSON-RPC check, SDK dispatch, schema validation, encoding)%n",
                "in the server, outside the handler", r.serverP50us() - r.phasesTotalP50us());
        System.out.printf("  %-36s %9.0f   (run p50 - server p50: the client, its SDK and the pipes)%n",
                "outside the server", r.runP50() * 1000 - r.serverP50us());
    }

    /** The bare tool the run is compared with: the same namespaces, uid drop and read-only binds, running `true`. */
    static List<String> bareBwrap(Path scratch) {
        return List.of("setpriv", "--reuid=1500000001", "--regid=1500000001", "--clear-groups",
                "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "bwrap", "--unshare-user", "--unshare-pid",
                "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--uid", "0", "--gid", "0",
                "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--ro-bind", "/usr", "/usr",
                "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
                "--ro-bind", "/etc", "/etc", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
                "--bind", scratch.toString(), "/workspace", "--disable-userns", "--", "/bin/true");
    }

    /** Measures per {@code plan}: bare bwrap and the MCP calls interleaved round by round, then the server's phases. */
    public static Result measure(Path jar, String isolation, String config, Plan plan) throws IOException, InterruptedException {
        String java = ProcessHandle.current().info().command().orElse("java");
        Path scratch = Files.createTempDirectory("bench-bwrap-");
        new ProcessBuilder("chown", "1500000001:1500000001", scratch.toString()).start().waitFor();
        List<String> bwrap = bareBwrap(scratch);
        Path home = Files.createTempDirectory("bench-berth-");
        Files.setPosixFilePermissions(home, PosixFilePermissions.fromString("rwx--x--x"));
        Path phases = Files.createTempFile("bench-phases-", ".jsonl");
        Files.delete(phases);
        List<String> serverArgs = new ArrayList<>(List.of("-Dberth.phases=" + phases));
        // more JVM options for the server (-Dberth.bench.serverJvm="-Dx=y -Dz=w"), e.g. an experiment's switch
        for (String o : System.getProperty("berth.bench.serverJvm", "").split(" ")) if (!o.isBlank()) serverArgs.add(o);
        serverArgs.addAll(List.of("-jar", jar.toString(), "stdio", "--home", home.toString(), "--isolation", isolation));
        if (isolation.equals("microvm")) serverArgs.addAll(List.of("--microvm-image", "test"));
        if (config != null) serverArgs.addAll(List.of("--config", config));
        var transport = new StdioClientTransport(ServerParameters.builder(java).args(serverArgs).build(),
                new JacksonMcpJsonMapper(JsonMapper.builder().build()));
        transport.setStdErrorHandler(line -> { });
        List<Double> bare = new ArrayList<>();
        List<Double> open = new ArrayList<>();
        List<Double> rtt = new ArrayList<>();
        List<Double> runRatios = new ArrayList<>();
        List<Double> openRatios = new ArrayList<>();
        try (McpSyncClient client = McpClient.sync(transport).requestTimeout(Duration.ofSeconds(120))
                .initializationTimeout(Duration.ofSeconds(120)).build()) {
            client.initialize();
            call(client, "run", Map.of("workspace", open(client), "command", "true")); // warm-up: JIT, agent binary, /etc
            for (int i = 0; i < 3; i++) bare(bwrap);
            for (int i = 0; i < plan.opens(); i++) {
                double b = bare(bwrap);
                bare.add(b);
                long t0 = System.nanoTime();
                String ws = open(client);
                call(client, "run", Map.of("workspace", ws, "command", "true"));
                double o = (System.nanoTime() - t0) / 1e6;
                open.add(o);
                openRatios.add(o / b);
                call(client, "close_workspace", Map.of("workspace", ws));
            }
            String ws = open(client);
            for (int i = 0; i < plan.warmRuns(); i++) call(client, "run", Map.of("workspace", ws, "command", "true"));
            for (int round = 0; round < plan.rounds(); round++) {
                double[] b = new double[plan.bare()];
                for (int i = 0; i < b.length; i++) bare.add(b[i] = bare(bwrap));
                double[] r = new double[plan.runs()];
                for (int i = 0; i < r.length; i++) {
                    long t0 = System.nanoTime();
                    call(client, "run", Map.of("workspace", ws, "command", "true"));
                    rtt.add(r[i] = (System.nanoTime() - t0) / 1e6);
                }
                runRatios.add(pct(r, 50) / pct(b, 50));
            }
        }
        // the server writes its phases when it exits (and every 200 ms before): wait for the timed runs' lines
        List<JsonNode> runs = List.of();
        for (int i = 0; i < 100 && runs.size() < 1 + plan.opens() + plan.warmRuns() + rtt.size(); i++) {
            if (i > 0) Thread.sleep(100);
            runs = calls(phases, "run");
        }
        List<JsonNode> server = calls(phases, "server:tools/call");
        Files.deleteIfExists(phases);
        Map<String, Double> phaseP50 = new LinkedHashMap<>();
        double totalP50 = 0;
        List<JsonNode> timed = runs.size() >= rtt.size() ? runs.subList(runs.size() - rtt.size(), runs.size()) : List.of();
        if (!timed.isEmpty()) {
            Map<String, List<Double>> by = new LinkedHashMap<>();
            for (JsonNode run : timed) {
                for (var name : run.path("phases_us").propertyNames()) {
                    by.computeIfAbsent(name, k -> new ArrayList<>()).add(run.path("phases_us").path(name).asDouble());
                }
            }
            by.forEach((k, v) -> phaseP50.put(k, pct(v, 50)));
            totalP50 = pct(timed.stream().map(n -> n.path("total_us").asDouble()).toList(), 50);
        }
        double serverP50 = server.size() < rtt.size() ? Double.NaN
                : pct(server.subList(server.size() - rtt.size(), server.size()).stream().map(n -> n.path("total_us").asDouble()).toList(), 50);
        if (server.size() >= rtt.size() && !phaseP50.isEmpty()) {
            phaseP50.put("mcp.handler_to_written", pct(server.subList(server.size() - rtt.size(), server.size()).stream()
                    .map(n -> n.path("handler_to_written_us").asDouble()).toList(), 50));
        }
        dev.berth.engine.spi.Trees.delete(scratch);
        double bareP50 = pct(bare, 50);
        return new Result(isolation, config == null ? null : Path.of(config).getFileName().toString(), bareP50, pct(bare, 99),
                pct(open, 50), pct(open, 99), pct(rtt, 50), pct(rtt, 99), pct(rtt, 50) / bareP50, pct(open, 50) / bareP50,
                pct(runRatios, 50), pct(openRatios, 50), bare.size(), rtt.size(), open.size(), phaseP50, totalP50, serverP50);
    }

    private static List<JsonNode> calls(Path file, String call) throws IOException {
        if (!Files.exists(file)) return List.of();
        List<JsonNode> out = new ArrayList<>();
        for (String line : Files.readAllLines(file)) {
            if (line.isBlank()) continue;
            JsonNode n = JSON.readTree(line);
            if (n.path("call").asString().equals(call)) out.add(n);
        }
        return out;
    }

    private static double bare(List<String> bwrap) throws IOException, InterruptedException {
        long t0 = System.nanoTime();
        Process p = new ProcessBuilder(bwrap).redirectErrorStream(true).start();
        p.getInputStream().readAllBytes();
        if (p.waitFor() != 0) throw new IllegalStateException("bare bwrap failed");
        return (System.nanoTime() - t0) / 1e6;
    }

    private static String open(McpSyncClient c) {
        return (String) ((Map<?, ?>) call(c, "open_workspace", Map.of()).structuredContent()).get("workspace");
    }

    private static McpSchema.CallToolResult call(McpSyncClient c, String tool, Map<String, Object> args) {
        var r = c.callTool(new McpSchema.CallToolRequest(tool, args));
        if (Boolean.TRUE.equals(r.isError())) throw new IllegalStateException(tool + " failed: " + r.content());
        return r;
    }

    static String loadAverage() {
        try {
            String s = Files.readString(Path.of("/proc/loadavg")).trim();
            return s.substring(0, s.indexOf(' ', s.indexOf(' ', s.indexOf(' ') + 1) + 1));
        } catch (IOException | RuntimeException e) {
            return "unknown";
        }
    }

    private static double round(double v) { return Math.round(v * 100) / 100.0; }

    static double pct(List<Double> xs, int p) {
        double[] a = new double[xs.size()];
        for (int i = 0; i < a.length; i++) a[i] = xs.get(i);
        return pct(a, p);
    }

    static double pct(double[] xs, int p) {
        if (xs.length == 0) return Double.NaN;
        double[] s = xs.clone();
        Arrays.sort(s);
        return s[Math.min(s.length - 1, Math.max(0, (int) Math.ceil(p / 100.0 * s.length) - 1))];
    }
}
