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
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import tools.jackson.databind.json.JsonMapper;

/**
 * Benchmark (prints figures, asserts nothing): latency of open_workspace -> first run("true") and of run("true")
 * round trips through MCP stdio (MCP Java SDK client -> berth.jar), next to bare `bwrap ... true` with the same
 * namespaces and mounts, measured in the same run. Usage: bench/run-namespace.sh [iterations].
 */
public final class LatencyBench {
    public static void main(String[] args) throws Exception {
        Path jar = Path.of(args[0]);
        int n = args.length > 1 ? Integer.parseInt(args[1]) : 200;
        String isolation = args.length > 2 ? args[2] : "namespace";
        String extra = args.length > 3 ? args[3] : null; // an operator config, e.g. to switch the guard off
        String java = ProcessHandle.current().info().command().orElse("java");

        // 1. bare bubblewrap: the same namespaces, uid drop and read-only binds, running `true`
        Path scratch = Files.createTempDirectory("bench-bwrap-");
        new ProcessBuilder("chown", "1500000001:1500000001", scratch.toString()).start().waitFor();
        List<String> bwrap = new ArrayList<>(List.of("setpriv", "--reuid=1500000001", "--regid=1500000001", "--clear-groups",
                "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "bwrap", "--unshare-user", "--unshare-pid",
                "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--uid", "0", "--gid", "0",
                "--die-with-parent", "--new-session", "--cap-drop", "ALL", "--ro-bind", "/usr", "/usr",
                "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64",
                "--ro-bind", "/etc", "/etc", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
                "--bind", scratch.toString(), "/workspace", "--disable-userns", "--", "/bin/true"));
        double[] bare = new double[Math.max(20, n / 4)];
        for (int i = 0; i < bare.length; i++) {
            long t0 = System.nanoTime();
            Process p = new ProcessBuilder(bwrap).redirectErrorStream(true).start();
            p.getInputStream().readAllBytes();
            if (p.waitFor() != 0) throw new IllegalStateException("bare bwrap failed");
            bare[i] = (System.nanoTime() - t0) / 1e6;
        }

        // 2. through MCP
        Path home = Files.createTempDirectory("bench-berth-");
        Files.setPosixFilePermissions(home, PosixFilePermissions.fromString("rwx--x--x"));
        var transport = new StdioClientTransport(ServerParameters.builder(java)
                .args(serverArgs(jar, home, isolation, extra)).build(),
                new JacksonMcpJsonMapper(JsonMapper.builder().build()));
        transport.setStdErrorHandler(line -> { });
        double[] open = new double[5];
        double[] rtt = new double[n];
        try (McpSyncClient client = McpClient.sync(transport).requestTimeout(Duration.ofSeconds(60)).build()) {
            client.initialize();
            call(client, "run", Map.of("workspace", open(client), "command", "true")); // warm-up: JIT, agent binary, /etc
            for (int i = 0; i < open.length; i++) {
                long t0 = System.nanoTime();
                String ws = open(client);
                call(client, "run", Map.of("workspace", ws, "command", "true"));
                open[i] = (System.nanoTime() - t0) / 1e6;
                call(client, "close_workspace", Map.of("workspace", ws));
            }
            String ws = open(client);
            for (int i = 0; i < 20; i++) call(client, "run", Map.of("workspace", ws, "command", "true"));
            for (int i = 0; i < n; i++) {
                long t0 = System.nanoTime();
                call(client, "run", Map.of("workspace", ws, "command", "true"));
                rtt[i] = (System.nanoTime() - t0) / 1e6;
            }
        }
        double bareP50 = pct(bare, 50);
        System.out.printf("%-44s %9s %9s %9s%n", isolation + " driver" + (extra == null ? "" : " (" + Path.of(extra).getFileName() + ")"),
                "p50 ms", "p99 ms", "vs bwrap");
        System.out.printf("%-44s %9.2f %9.2f %9s%n", "bare `bwrap ... true` (" + bare.length + "x)", bareP50, pct(bare, 99), "1.00x");
        System.out.printf("%-44s %9.2f %9.2f %8.2fx%n", "MCP open_workspace + first run(true) (" + open.length + "x)", pct(open, 50), pct(open, 99), pct(open, 50) / bareP50);
        System.out.printf("%-44s %9.2f %9.2f %8.2fx%n", "MCP run(true) round trip (" + n + "x)", pct(rtt, 50), pct(rtt, 99), pct(rtt, 50) / bareP50);
        System.exit(0);
    }

    private static List<String> serverArgs(Path jar, Path home, String isolation, String config) {
        List<String> a = new ArrayList<>(List.of("-jar", jar.toString(), "stdio", "--home", home.toString(), "--isolation", isolation));
        if (isolation.equals("microvm")) a.addAll(List.of("--microvm-image", "test"));
        if (config != null) a.addAll(List.of("--config", config));
        return a;
    }

    private static String open(McpSyncClient c) {
        return (String) ((Map<?, ?>) call(c, "open_workspace", Map.of()).structuredContent()).get("workspace");
    }

    private static McpSchema.CallToolResult call(McpSyncClient c, String tool, Map<String, Object> args) {
        var r = c.callTool(new McpSchema.CallToolRequest(tool, args));
        if (Boolean.TRUE.equals(r.isError())) throw new IllegalStateException(tool + " failed: " + r.content());
        return r;
    }

    static double pct(double[] xs, int p) {
        double[] s = xs.clone();
        Arrays.sort(s);
        return s[Math.min(s.length - 1, (int) Math.ceil(p / 100.0 * s.length) - 1)];
    }
}
