package dev.berth.engine;

import dev.berth.engine.api.EngineConfig;
import dev.berth.engine.api.GuardMode;
import dev.berth.engine.api.OpenRequest;
import dev.berth.engine.api.OutputListener;
import dev.berth.engine.api.RunRequest;
import dev.berth.engine.api.Tenant;

import dev.berth.engine.audit.AuditTrail;
import dev.berth.engine.audit.Durability;
import dev.berth.engine.namespace.NamespaceDriver;
import dev.berth.proxy.audit.AuditSink;
import dev.berth.proxy.EgressContext;
import dev.berth.proxy.EgressProxy;
import dev.berth.proxy.policy.Policy;
import dev.berth.proxy.ProxyConfig;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * Benchmark, not a test: what the audit chain costs, with logging on and off side by side in the same process and
 * interleaved rounds. (1) The {@code run("true")} round trip through the engine on a real namespace workspace: with
 * logging on, each run writes what the MCP layer and the engine write for it (a {@code tool_call} record written
 * before the call, {@code run_start} written, the {@code run} record fsynced with both, the receipt signed); off, the
 * trail records nothing and the receipt is still signed. (2) Egress connection setup through the proxy's loopback
 * listener (TCP connect, CONNECT, 200, one echoed byte; the connection's audit record is queued when it closes and
 * fsynced by the flusher), and the whole connect-to-close cycle, with the proxy's sink the chain vs discarding.
 *
 * <pre>
 * mvn -q -o -pl sandbox-engine -am test-compile
 * CP=egress-proxy/target/classes:tool-schemas/target/classes:sandbox-engine/target/classes:sandbox-engine/target/test-classes
 * CP=$CP:$(mvn -q -o -pl sandbox-engine dependency:build-classpath -Dmdep.outputFile=/dev/stdout)
 * $JAVA_HOME/bin/java -cp "$CP" dev.berth.engine.EvidenceBenchmark 7 100 2000   # rounds, runs per round, connects per round
 * $JAVA_HOME/bin/java -Dberth.bench.guard=off -cp "$CP" dev.berth.engine.EvidenceBenchmark 11 100 0   # guard off on both sides
 * </pre>
 */
public final class EvidenceBenchmark {
    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 7;
        int runs = args.length > 1 ? Integer.parseInt(args[1]) : 100;
        int connects = args.length > 2 ? Integer.parseInt(args[2]) : 2000;
        Path dir = Files.createTempDirectory("berth-evidence-bench-");
        // sandboxes run as their own uids and must traverse to their state under the home
        Files.setPosixFilePermissions(dir, java.nio.file.attribute.PosixFilePermissions.fromString("rwx--x--x"));
        try {
            if (runs > 0) runs(dir, rounds, runs);
            egress(dir, rounds, connects);
        } finally {
            dev.berth.engine.spi.Trees.delete(dir);
        }
    }

    static void runs(Path dir, int rounds, int n) throws Exception {
        Path onHome = Files.createDirectories(dir.resolve("on"));
        Path offHome = Files.createDirectories(dir.resolve("off"));
        AuditTrail onTrail = AuditTrail.open(onHome, AuditTrail.OnFailure.REFUSE);
        // -Dberth.bench.guard=off|report|revert: the agent-config guard of both engines (default: the engine's own)
        EngineConfig onConfig = EngineConfig.defaults(onHome, List.of(new NamespaceDriver(onHome))).withAudit(onTrail);
        GuardMode guard = GuardMode.parse(System.getProperty("berth.bench.guard", onConfig.guard().name()));
        try (Engine onEngine = Engine.start(onConfig.withGuard(guard));
             Engine off = Engine.start(EngineConfig.defaults(offHome, List.of(new NamespaceDriver(offHome)))
                     .withAudit(AuditTrail.disabledForBenchmark(offHome)).withGuard(guard))) {
            String wsOn = onEngine.open(Tenant.LOCAL, OpenRequest.ephemeral()).workspace().id();
            String wsOff = off.open(Tenant.LOCAL, OpenRequest.ephemeral()).workspace().id();
            RunRequest rOn = new RunRequest(wsOn, "true", null, Map.of(), 30, null, null, null, null);
            RunRequest rOff = new RunRequest(wsOff, "true", null, Map.of(), 30, null, null, null, null);
            for (int i = 0; i < 20; i++) { // warm-up
                runOn(onEngine, onTrail, rOn);
                off.run(Tenant.LOCAL, rOff, OutputListener.NONE);
            }
            double[] a = new double[rounds];
            double[] b = new double[rounds];
            for (int r = 0; r < rounds; r++) {
                long on = 0;
                long offT = 0;
                for (int i = 0; i < n; i++) { // alternate, so load from elsewhere on the machine hits both alike
                    long t0 = System.nanoTime();
                    off.run(Tenant.LOCAL, rOff, OutputListener.NONE);
                    long t1 = System.nanoTime();
                    runOn(onEngine, onTrail, rOn);
                    on += System.nanoTime() - t1;
                    offT += t1 - t0;
                }
                a[r] = on / 1e6 / n;
                b[r] = offT / 1e6 / n;
            }
            System.out.printf("run(\"true\") round trip, namespace workspace, guard %s, median of %d rounds x %d runs:%n",
                    guard.name().toLowerCase(java.util.Locale.ROOT), rounds, n);
            System.out.printf("  audit off                                   %7.2f ms%n", median(b));
            System.out.printf("  audit on (tool_call + run_start + run fsynced + receipt)  %7.2f ms  (+%.1f%%)%n",
                    median(a), (median(a) / median(b) - 1) * 100);
        }
    }

    /** What one MCP run call records: the tool call (queued), then the engine's run_start (written) and run (fsynced). */
    private static void runOn(Engine engine, AuditTrail trail, RunRequest req) throws Exception {
        // as ToolAudit does for a foreground run: queued, written together with the engine's run_start
        trail.record("local", "tool_call", Map.of("tool", "run", "arguments", Map.of("command", req.command())), Durability.QUEUED);
        engine.run(Tenant.LOCAL, req, OutputListener.NONE);
    }

    static void egress(Path dir, int rounds, int n) throws Exception {
        if (n <= 0) return;
        try (Echo up = new Echo()) {
            Policy allow = Policy.of(List.of("allowed.test:" + up.port()));
            ProxyConfig cfg = ProxyConfig.builder().ceiling(allow).unsafeAllowLoopbackUpstreams(true)
                    .maxConnectsPerSecond(1_000_000).build(); // the per-workspace rate limit would refuse the benchmark's loop
            AuditTrail trail = AuditTrail.open(Files.createDirectories(dir.resolve("egress")), AuditTrail.OnFailure.REFUSE);
            trail.bindWorkspace("ws-bench", "bench");
            EgressContext ctx = new EgressContext("ws-bench", null, allow, d -> { });
            InetSocketAddress any = new InetSocketAddress(InetAddress.getLoopbackAddress(), 0);
            try (EgressProxy onProxy = EgressProxy.builder(cfg).resolver(h -> List.of(InetAddress.getLoopbackAddress()))
                         .auditSink(trail.egressSink()).threads(2).start();
                 EgressProxy offProxy = EgressProxy.builder(cfg).resolver(h -> List.of(InetAddress.getLoopbackAddress()))
                         .auditSink(AuditSink.discard()).threads(2).start();
                 EgressProxy.Listener onL = onProxy.listen(any, ctx);
                 EgressProxy.Listener offL = offProxy.listen(any, ctx)) {
                cycle(offL.address().getPort(), up.port(), 500, new long[500], new long[500]);
                cycle(onL.address().getPort(), up.port(), 500, new long[500], new long[500]);
                double[] setupOn = new double[rounds], setupOff = new double[rounds], cycOn = new double[rounds], cycOff = new double[rounds];
                for (int r = 0; r < rounds; r++) {
                    long[] s = new long[n];
                    long[] c = new long[n];
                    cycle(offL.address().getPort(), up.port(), n, s, c);
                    setupOff[r] = p50(s);
                    cycOff[r] = mean(c);
                    cycle(onL.address().getPort(), up.port(), n, s, c);
                    setupOn[r] = p50(s);
                    cycOn[r] = mean(c);
                }
                System.out.printf("egress connection through the proxy listener, median of %d rounds x %d connections:%n", rounds, n);
                System.out.printf("  p50 setup (connect, CONNECT, 200, 1 echoed byte): audit off %6.1f us, on %6.1f us (+%.1f%%)%n",
                        median(setupOff), median(setupOn), (median(setupOn) / median(setupOff) - 1) * 100);
                System.out.printf("  mean connect-to-close cycle:                       audit off %6.1f us, on %6.1f us (+%.1f%%)%n",
                        median(cycOff), median(cycOn), (median(cycOn) / median(cycOff) - 1) * 100);
            } finally {
                trail.close();
            }
        }
    }

    /** n connections one after another: setup time and whole cycle time of each, in microseconds. */
    static void cycle(int proxyPort, int upPort, int n, long[] setup, long[] whole) throws IOException {
        byte[] connect = ("CONNECT allowed.test:" + upPort + " HTTP/1.1\r\nHost: allowed.test:" + upPort + "\r\n\r\n")
                .getBytes(StandardCharsets.US_ASCII);
        for (int i = 0; i < n; i++) {
            long t0 = System.nanoTime();
            try (Socket s = new Socket(InetAddress.getLoopbackAddress(), proxyPort)) {
                s.setTcpNoDelay(true);
                OutputStream o = s.getOutputStream();
                InputStream in = s.getInputStream();
                o.write(connect);
                int state = 0;
                StringBuilder head = new StringBuilder();
                while (state < 4) { // up to the blank line after "200 ..."
                    int b = in.read();
                    if (b < 0) throw new IOException("proxy closed during CONNECT: " + head);
                    head.append((char) b);
                    state = (b == '\r' && (state == 0 || state == 2)) || (b == '\n' && (state == 1 || state == 3)) ? state + 1 : 0;
                }
                if (!head.toString().startsWith("HTTP/1.1 200")) throw new IOException("CONNECT refused: " + head);
                o.write('x');
                if (in.read() != 'x') throw new IOException("no echo after " + head);
                setup[i] = (System.nanoTime() - t0) / 1000;
            }
            whole[i] = (System.nanoTime() - t0) / 1000;
        }
    }

    static double p50(long[] v) {
        long[] s = v.clone();
        Arrays.sort(s);
        return s[s.length / 2];
    }

    static double mean(long[] v) {
        return Arrays.stream(v).average().orElse(0);
    }

    static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        return s[s.length / 2];
    }

    /** A loopback echo server, one virtual thread per connection. */
    static final class Echo implements AutoCloseable {
        final ServerSocket server = new ServerSocket(0, 512, InetAddress.getLoopbackAddress());

        Echo() throws IOException {
            Thread.ofPlatform().daemon().start(() -> {
                while (!server.isClosed()) {
                    try {
                        Socket s = server.accept();
                        Thread.ofVirtual().start(() -> {
                            try (s) {
                                s.getInputStream().transferTo(s.getOutputStream());
                            } catch (IOException ignored) {
                                // the client went away
                            }
                        });
                    } catch (IOException e) {
                        return;
                    }
                }
            });
        }

        int port() { return server.getLocalPort(); }

        @Override
        public void close() throws IOException { server.close(); }
    }
}
