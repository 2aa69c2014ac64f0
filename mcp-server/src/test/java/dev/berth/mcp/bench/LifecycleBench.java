package dev.berth.mcp.bench;

import io.modelcontextprotocol.client.McpClient;
import io.modelcontextprotocol.client.McpSyncClient;
import io.modelcontextprotocol.client.transport.ServerParameters;
import io.modelcontextprotocol.client.transport.StdioClientTransport;
import io.modelcontextprotocol.json.jackson3.JacksonMcpJsonMapper;
import io.modelcontextprotocol.spec.McpSchema;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import tools.jackson.databind.json.JsonMapper;

/**
 * Benchmark (prints figures, asserts nothing): the lifecycle calls through MCP stdio (MCP Java SDK client ->
 * berth.jar) for two builds side by side, e.g. before and after a change, in the same run: rounds alternate between
 * the jars, so a load that comes and goes falls on both. Per round and jar a fresh server and home; one warm-up open;
 * then per repetition: open a persistent workspace + its first run("true"), run("true") round trips, park, resume
 * (open by name + run("true")), snapshot, fork (open from the snapshot + run("true")), close with delete.
 *
 * <p>Usage: {@code bench/run-lifecycle.sh BEFORE.jar AFTER.jar [namespace|microvm] [rounds] [reps] [runs]}.
 */
public final class LifecycleBench {

    static final List<String> OPS = List.of("open + first run", "run(true)", "park", "resume + first run", "snapshot", "fork + first run");

    public static void main(String[] args) throws Exception {
        List<Path> jars = List.of(Path.of(args[0]), Path.of(args[1]));
        String isolation = args.length > 2 ? args[2] : "namespace";
        int rounds = args.length > 3 ? Integer.parseInt(args[3]) : 3;
        int reps = args.length > 4 ? Integer.parseInt(args[4]) : 3;
        int runs = args.length > 5 ? Integer.parseInt(args[5]) : 50;
        List<Map<String, List<Double>>> figures = List.of(new LinkedHashMap<>(), new LinkedHashMap<>());
        for (Map<String, List<Double>> f : figures) for (String op : OPS) f.put(op, new ArrayList<>());
        for (int r = 0; r < rounds; r++) {
            for (int j = 0; j < 2; j++) {
                int which = (r % 2 == 0) ? j : 1 - j; // ABBA: neither jar always goes first
                round(jars.get(which), isolation, reps, runs, figures.get(which));
            }
        }
        System.out.printf("%s, %d rounds x %d repetitions (run: %d round trips per repetition), p50 ms%n", isolation, rounds, reps, runs);
        System.out.printf("%-22s %10s %10s %8s%n", "call", jars.get(0).getFileName(), jars.get(1).getFileName(), "after/before");
        for (String op : OPS) {
            double a = LatencyBench.pct(toArray(figures.get(0).get(op)), 50);
            double b = LatencyBench.pct(toArray(figures.get(1).get(op)), 50);
            System.out.printf("%-22s %10.2f %10.2f %7.2fx%n", op, a, b, b / a);
        }
        System.exit(0);
    }

    private static void round(Path jar, String isolation, int reps, int runs, Map<String, List<Double>> out) throws Exception {
        String java = ProcessHandle.current().info().command().orElse("java");
        Path home = Files.createTempDirectory("bench-lifecycle-");
        Files.setPosixFilePermissions(home, PosixFilePermissions.fromString("rwx--x--x"));
        List<String> a = new ArrayList<>(List.of("-jar", jar.toString(), "stdio", "--home", home.toString(), "--isolation", isolation));
        if (isolation.equals("microvm")) a.addAll(List.of("--microvm-image", "test"));
        var transport = new StdioClientTransport(ServerParameters.builder(java).args(a).build(),
                new JacksonMcpJsonMapper(JsonMapper.builder().build()));
        transport.setStdErrorHandler(line -> { });
        try (McpSyncClient c = McpClient.sync(transport).requestTimeout(Duration.ofSeconds(300)).initializationTimeout(Duration.ofSeconds(120)).build()) {
            c.initialize();
            String warm = (String) struct(call(c, "open_workspace", Map.of())).get("workspace");
            call(c, "run", Map.of("workspace", warm, "command", "true"));
            call(c, "close_workspace", Map.of("workspace", warm));
            for (int i = 0; i < reps; i++) {
                String name = "bench-" + i;
                long t = System.nanoTime();
                String ws = (String) struct(call(c, "open_workspace", Map.of("name", name, "lifecycle", "persistent"))).get("workspace");
                call(c, "run", Map.of("workspace", ws, "command", "true"));
                out.get("open + first run").add(ms(t));
                for (int k = 0; k < runs; k++) {
                    t = System.nanoTime();
                    call(c, "run", Map.of("workspace", ws, "command", "true"));
                    out.get("run(true)").add(ms(t));
                }
                t = System.nanoTime();
                call(c, "park", Map.of("workspace", ws));
                out.get("park").add(ms(t));
                t = System.nanoTime();
                call(c, "open_workspace", Map.of("name", name));
                call(c, "run", Map.of("workspace", ws, "command", "true"));
                out.get("resume + first run").add(ms(t));
                t = System.nanoTime();
                String snap = (String) struct(call(c, "snapshot", Map.of("workspace", ws))).get("snapshot");
                out.get("snapshot").add(ms(t));
                t = System.nanoTime();
                String fork = (String) struct(call(c, "open_workspace", Map.of("from_snapshot", snap))).get("workspace");
                call(c, "run", Map.of("workspace", fork, "command", "true"));
                out.get("fork + first run").add(ms(t));
                call(c, "close_workspace", Map.of("workspace", fork, "delete", true));
                call(c, "close_workspace", Map.of("workspace", ws, "delete", true));
                call(c, "snapshot", Map.of("delete", snap));
            }
        }
        new ProcessBuilder("rm", "-rf", home.toString()).start().waitFor();
    }

    private static double ms(long t0) { return (System.nanoTime() - t0) / 1e6; }

    private static double[] toArray(List<Double> xs) { return xs.stream().mapToDouble(Double::doubleValue).toArray(); }

    private static Map<?, ?> struct(McpSchema.CallToolResult r) { return (Map<?, ?>) r.structuredContent(); }

    private static McpSchema.CallToolResult call(McpSyncClient c, String tool, Map<String, Object> args) {
        var r = c.callTool(new McpSchema.CallToolRequest(tool, args));
        if (Boolean.TRUE.equals(r.isError())) throw new IllegalStateException(tool + " failed: " + r.content());
        return r;
    }
}
