package dev.berth.engine;

import dev.berth.engine.api.EgressSettings;
import dev.berth.engine.api.EngineConfig;
import dev.berth.engine.api.OpenRequest;
import dev.berth.engine.api.OutputListener;
import dev.berth.engine.api.RunRequest;
import dev.berth.engine.api.RunResult;
import dev.berth.engine.api.Tenant;

import com.sun.net.httpserver.HttpServer;
import dev.berth.engine.namespace.NamespaceDriver;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;

/**
 * Download throughput of the whole egress path as a workspace meets it: curl inside a real namespace workspace,
 * through the agent's proxy port, the agent channel, the engine and the in-JVM egress proxy (CONNECT tunnel), to a
 * loopback upstream streaming {@code MiB} MiB; against curl on the host straight to the same upstream (no sandbox, no
 * proxy), in the same run, rounds interleaved. Median MiB/s of the rounds.
 *
 * <pre>
 * mvn -q -pl sandbox-engine -am test-compile
 * CP=$(mvn -q -pl sandbox-engine dependency:build-classpath -Dmdep.outputFile=/dev/stdout):sandbox-engine/target/classes:sandbox-engine/target/test-classes
 * $JAVA_HOME/bin/java -cp "$CP" dev.berth.engine.TunnelBenchmark 5 256      # rounds, MiB per download
 * </pre>
 */
public final class TunnelBenchmark {
    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 5;
        long bytes = (args.length > 1 ? Long.parseLong(args[1]) : 256) << 20;
        HttpServer up = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 16);
        byte[] block = new byte[256 * 1024];
        up.createContext("/", ex -> {
            ex.sendResponseHeaders(200, bytes);
            try (var out = ex.getResponseBody()) {
                for (long left = bytes; left > 0; left -= block.length) out.write(block, 0, (int) Math.min(block.length, left));
            }
        });
        up.setExecutor(java.util.concurrent.Executors.newVirtualThreadPerTaskExecutor());
        up.start();
        int port = up.getAddress().getPort();
        Path home = Files.createTempDirectory("berth-tunnel-bench-");
        EgressSettings egress = EgressFixture.proxy(List.of("allowed.test:" + port));
        try (Engine engine = Engine.start(EngineConfig.defaults(home, List.of(new NamespaceDriver(home))).withEgress(egress))) {
            String ws = engine.open(Tenant.LOCAL, OpenRequest.ephemeral()).workspace().id();
            String inside = "curl -sS --proxytunnel -o /dev/null -w '%{speed_download}' http://allowed.test:" + port + "/";
            // warm-up: the JIT compiles the data path during the first gigabyte (C2 was still busy after 4 s without it)
            RunResult warm = engine.run(Tenant.LOCAL, new RunRequest(ws, inside, null, null, 300, null, null), OutputListener.NONE);
            if (warm.exitCode() != 0) throw new IllegalStateException("warm-up curl in the workspace failed: " + warm);
            double[] w = new double[rounds];
            double[] d = new double[rounds];
            for (int r = 0; r < rounds; r++) {
                RunResult res = engine.run(Tenant.LOCAL, new RunRequest(ws, inside, null, null, 300, null, null), OutputListener.NONE);
                if (res.exitCode() != 0) throw new IllegalStateException("curl in the workspace failed: " + res);
                w[r] = Double.parseDouble(res.stdout().trim()) / (1 << 20);
                Process p = new ProcessBuilder("curl", "-sS", "-o", "/dev/null", "-w", "%{speed_download}", "http://127.0.0.1:" + port + "/")
                        .redirectErrorStream(true).start();
                String out = new String(p.getInputStream().readAllBytes()).trim();
                if (p.waitFor() != 0) throw new IllegalStateException("curl on the host failed: " + out);
                d[r] = Double.parseDouble(out) / (1 << 20);
                System.out.printf("round %d: host %.0f MiB/s, workspace through the tunnel %.0f MiB/s%n", r + 1, d[r], w[r]);
            }
            System.out.printf("%d MiB download, median of %d rounds: host curl direct %.0f MiB/s, workspace curl through the egress"
                    + " tunnel %.0f MiB/s (%.2fx direct)%n", bytes >> 20, rounds, median(d), median(w), median(w) / median(d));
        } finally {
            up.stop(0);
            dev.berth.engine.spi.Trees.delete(home);
        }
    }

    static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        return s[s.length / 2];
    }
}
