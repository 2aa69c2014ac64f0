package dev.berth.engine;

import dev.berth.engine.api.EgressSettings;
import dev.berth.engine.api.EngineConfig;
import dev.berth.engine.api.OpenRequest;
import dev.berth.engine.api.OutputListener;
import dev.berth.engine.api.RunRequest;
import dev.berth.engine.api.RunResult;
import dev.berth.engine.api.Tenant;

import com.sun.net.httpserver.HttpsServer;
import dev.berth.engine.namespace.NamespaceDriver;
import dev.berth.proxy.policy.SecretBinding;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * What a secret binding costs a request, measured from inside a real namespace workspace with curl: one new HTTPS
 * connection per request through the egress proxy, (a) to a host without a binding (the plain CONNECT tunnel,
 * end-to-end TLS), (b) to the bound host with the placeholder (the proxy terminates TLS, swaps the placeholder and
 * opens its own verified TLS connection upstream), and (c) curl straight to the loopback upstream from the host (no
 * sandbox, no proxy), as the floor. Each figure is the median over rounds of a loop of {@code n} curls divided by n.
 *
 * <pre>
 * mvn -q -pl sandbox-engine -am test-compile
 * CP=$(mvn -q -pl sandbox-engine dependency:build-classpath -Dmdep.outputFile=/dev/stdout):sandbox-engine/target/classes:sandbox-engine/target/test-classes
 * $JAVA_HOME/bin/java -cp "$CP" dev.berth.engine.SecretBenchmark 5 40      # rounds, curls per round
 * </pre>
 */
public final class SecretBenchmark {
    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 5;
        int n = args.length > 1 ? Integer.parseInt(args[1]) : 40;
        String real = "ghp_benchmarkSecretValue";
        Path home = Files.createTempDirectory("berth-secret-bench-");
        TestPki pki = TestPki.create();
        HttpsServer up = pki.https(ex -> "ok", "api.cred.test", "other.cred.test");
        int port = up.getAddress().getPort();
        Path root = pki.writeCaPem(home.resolve("root.pem"));
        EgressSettings egress = EgressFixture.secretProxy(List.of("api.cred.test:" + port, "other.cred.test:" + port), port, root,
                SecretBinding.of("gh", "GH_TOKEN", List.of("api.cred.test"), real), home.resolve("ca"));
        try (Engine engine = Engine.start(EngineConfig.defaults(home, List.of(new NamespaceDriver(home))).withEgress(egress))) {
            String ws = engine.open(Tenant.LOCAL, new OpenRequest(null, "ephemeral", null, null, null, null, List.of("gh")))
                    .workspace().id();
            engine.writeFile(Tenant.LOCAL, ws, "/workspace/root.pem", pki.caPem().getBytes(), false, null);
            String loop = "i=0; while [ $i -lt " + n + " ]; do %s || exit 1; i=$((i+1)); done";
            String tunnel = loop.formatted("curl -sS -o /dev/null --cacert /workspace/root.pem -H \"Authorization: Bearer $GH_TOKEN\" https://other.cred.test:" + port + "/");
            String injected = loop.formatted("curl -sS -o /dev/null -H \"Authorization: Bearer $GH_TOKEN\" https://api.cred.test:" + port + "/");
            double[] t = new double[rounds];
            double[] i = new double[rounds];
            double[] d = new double[rounds];
            for (int r = 0; r < rounds; r++) {
                t[r] = perRequest(engine, ws, tunnel, n);
                i[r] = perRequest(engine, ws, injected, n);
                d[r] = direct(root, port, n);
            }
            System.out.printf("per HTTPS request (new connection each), median of %d rounds x %d curls:%n", rounds, n);
            System.out.printf("  curl on the host, straight to the upstream   %7.1f ms%n", median(d));
            System.out.printf("  workspace -> proxy tunnel (unbound host)     %7.1f ms%n", median(t));
            System.out.printf("  workspace -> proxy, intercepted + injected   %7.1f ms  (%.2fx the tunnel)%n", median(i), median(i) / median(t));
        } finally {
            up.stop(0);
            dev.berth.engine.spi.Trees.delete(home);
        }
    }

    private static double perRequest(Engine engine, String ws, String cmd, int n) throws Exception {
        RunResult r = engine.run(Tenant.LOCAL, new RunRequest(ws, cmd, null, Map.of(), 600, null, null), OutputListener.NONE);
        if (r.exitCode() != 0) throw new IllegalStateException("benchmark loop failed: " + r);
        return (double) r.durationMs() / n;
    }

    private static double direct(Path root, int port, int n) throws Exception {
        List<String> cmd = List.of("sh", "-c", ("i=0; while [ $i -lt %d ]; do curl -sS -o /dev/null --noproxy '*' --cacert %s"
                + " --resolve api.cred.test:%d:127.0.0.1 https://api.cred.test:%d/ || exit 1; i=$((i+1)); done").formatted(n, root, port, port));
        long t0 = System.nanoTime();
        Process p = new ProcessBuilder(cmd).inheritIO().start();
        if (p.waitFor() != 0) throw new IllegalStateException("direct curl loop failed");
        return (System.nanoTime() - t0) / 1e6 / n;
    }

    private static double median(double[] v) {
        double[] s = v.clone();
        java.util.Arrays.sort(s);
        return s[s.length / 2];
    }
}
