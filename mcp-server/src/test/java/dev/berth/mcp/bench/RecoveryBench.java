package dev.berth.mcp.bench;

import io.modelcontextprotocol.client.McpClient;
import io.modelcontextprotocol.client.McpSyncClient;
import io.modelcontextprotocol.client.transport.ServerParameters;
import io.modelcontextprotocol.client.transport.StdioClientTransport;
import io.modelcontextprotocol.json.jackson3.JacksonMcpJsonMapper;
import io.modelcontextprotocol.spec.McpSchema;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import tools.jackson.databind.json.JsonMapper;

/**
 * Benchmark (prints figures, asserts nothing): crash recovery through MCP stdio. A server with N running persistent
 * microVM workspaces is killed with SIGKILL; a new server is started on the same home and the time is taken from its
 * start to the first answered run in every workspace (each QEMU taken over, nothing booted), next to a clean restart
 * (park at shutdown, resume at the first run) of the same workspaces. Usage: bench/run-recovery.sh [workspaces=3].
 */
public final class RecoveryBench {
    public static void main(String[] args) throws Exception {
        Path jar = Path.of(args[0]);
        int n = args.length > 1 ? Integer.parseInt(args[1]) : 3;
        String java = ProcessHandle.current().info().command().orElse("java");
        Path home = Files.createTempDirectory("bench-recovery-");
        List<String> names = new ArrayList<>();
        for (int i = 0; i < n; i++) names.add("crash-" + i);

        McpSyncClient c = client(java, jar, home);
        for (String w : names) {
            call(c, "open_workspace", Map.of("name", w));
            call(c, "run", Map.of("workspace", w, "command", "echo before > /tmp/mem"));
        }
        long serverPid = serverPid(home);
        ProcessHandle.of(serverPid).orElseThrow().destroyForcibly();
        ProcessHandle.of(serverPid).orElseThrow().onExit().join();
        try { c.closeGracefully(); } catch (RuntimeException ignored) { }

        long t0 = System.nanoTime();
        c = client(java, jar, home);
        double initialized = (System.nanoTime() - t0) / 1e6;
        for (String w : names) {
            Object out = ((Map<?, ?>) call(c, "run", Map.of("workspace", w, "command", "cat /tmp/mem")).structuredContent()).get("stdout");
            if (!"before\n".equals(out)) throw new IllegalStateException("memory lost in " + w + ": " + out);
        }
        double crash = (System.nanoTime() - t0) / 1e6;
        c.closeGracefully(); // clean shutdown: every workspace is parked with its memory
        waitForExit(home);

        t0 = System.nanoTime();
        c = client(java, jar, home);
        for (String w : names) call(c, "run", Map.of("workspace", w, "command", "cat /tmp/mem"));
        double clean = (System.nanoTime() - t0) / 1e6;
        for (String w : names) call(c, "close_workspace", Map.of("workspace", w, "delete", true));
        c.closeGracefully();

        System.out.printf("%d microVM workspaces (test image), server start to the first run answered in each:%n", n);
        System.out.printf("%-58s %9.0f ms (%.0f ms per workspace; start-up and takeover %.0f ms)%n",
                "after kill -9 (QEMUs taken over, memory kept)", crash, crash / n, initialized);
        System.out.printf("%-58s %9.0f ms (%.0f ms per workspace)%n", "after a clean restart (parked, resumed)", clean, clean / n);
        System.exit(0);
    }

    private static McpSyncClient client(String java, Path jar, Path home) {
        var transport = new StdioClientTransport(ServerParameters.builder(java).args(List.of("-jar", jar.toString(), "stdio",
                "--home", home.toString(), "--isolation", "microvm", "--microvm-image", "test")).build(),
                new JacksonMcpJsonMapper(JsonMapper.builder().build()));
        transport.setStdErrorHandler(line -> { });
        McpSyncClient c = McpClient.sync(transport).requestTimeout(Duration.ofSeconds(120)).build();
        c.initialize();
        return c;
    }

    private static long serverPid(Path home) throws Exception {
        return Long.parseLong(Files.readString(home.resolve("owner.lock")).strip());
    }

    private static void waitForExit(Path home) throws Exception {
        ProcessHandle.of(serverPid(home)).ifPresent(p -> p.onExit().join());
    }

    private static McpSchema.CallToolResult call(McpSyncClient c, String tool, Map<String, Object> args) {
        var r = c.callTool(new McpSchema.CallToolRequest(tool, args));
        if (Boolean.TRUE.equals(r.isError())) throw new IllegalStateException(tool + " failed: " + r.content());
        return r;
    }
}
