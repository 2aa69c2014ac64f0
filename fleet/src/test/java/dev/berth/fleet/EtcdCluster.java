package dev.berth.fleet;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;

/**
 * A real 3-member etcd cluster on loopback ports (Debian's etcd-server), started once per test run and shared by
 * every fleet test class that asks for it ({@code @ExtendWith(EtcdCluster.Shared.class)} and an {@code EtcdCluster}
 * parameter); data directories under a temporary directory, every member killed and the directory deleted when the
 * run ends. Test classes keep apart by key prefix ({@link #prefix}).
 */
public final class EtcdCluster implements AutoCloseable {
    private static final int MEMBERS = 3;
    private final Path dir;
    private final List<Process> members = new ArrayList<>();
    private final List<URI> clientUrls = new ArrayList<>();
    private static int prefixes;

    private EtcdCluster(Path dir) {
        this.dir = dir;
    }

    /** Starts the cluster and waits (bounded) until every member reports healthy. */
    public static EtcdCluster start() throws IOException, InterruptedException {
        Path dir = Files.createTempDirectory("berth-etcd-");
        EtcdCluster c = new EtcdCluster(dir);
        try {
            int[] client = new int[MEMBERS];
            int[] peer = new int[MEMBERS];
            List<ServerSocket> held = new ArrayList<>();
            for (int i = 0; i < MEMBERS * 2; i++) held.add(new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress()));
            for (int i = 0; i < MEMBERS; i++) {
                client[i] = held.get(i).getLocalPort();
                peer[i] = held.get(MEMBERS + i).getLocalPort();
            }
            for (ServerSocket s : held) s.close();
            StringBuilder initial = new StringBuilder();
            for (int i = 0; i < MEMBERS; i++) initial.append(i == 0 ? "" : ",").append("m").append(i).append("=http://127.0.0.1:").append(peer[i]);
            for (int i = 0; i < MEMBERS; i++) {
                String curl = "http://127.0.0.1:" + client[i];
                String purl = "http://127.0.0.1:" + peer[i];
                c.clientUrls.add(URI.create(curl));
                Path data = dir.resolve("m" + i);
                c.members.add(new ProcessBuilder("etcd", "--name", "m" + i, "--data-dir", data.toString(),
                        "--listen-client-urls", curl, "--advertise-client-urls", curl,
                        "--listen-peer-urls", purl, "--initial-advertise-peer-urls", purl,
                        "--initial-cluster", initial.toString(), "--initial-cluster-state", "new",
                        "--initial-cluster-token", dir.getFileName().toString(),
                        "--heartbeat-interval", "100", "--election-timeout", "1000", "--log-level", "warn")
                        .redirectErrorStream(true).redirectOutput(dir.resolve("m" + i + ".log").toFile()).start());
            }
            c.awaitHealthy(Duration.ofSeconds(60));
            return c;
        } catch (IOException | InterruptedException | RuntimeException e) {
            c.close();
            throw e;
        }
    }

    private void awaitHealthy(Duration within) throws InterruptedException, IOException {
        long deadline = System.nanoTime() + within.toNanos();
        try (HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build()) {
            for (URI u : clientUrls) {
                while (true) {
                    try {
                        var r = http.send(HttpRequest.newBuilder(u.resolve("/health")).timeout(Duration.ofSeconds(2)).build(),
                                HttpResponse.BodyHandlers.ofString());
                        if (r.body().contains("\"true\"")) break;
                    } catch (IOException e) {
                        // not listening yet
                    }
                    for (Process p : members) {
                        if (!p.isAlive()) throw new IOException("an etcd member exited at start: " + Files.readString(dir.resolve("m" + members.indexOf(p) + ".log")));
                    }
                    if (System.nanoTime() > deadline) throw new IOException("etcd at " + u + " not healthy within " + within);
                    Thread.sleep(50);
                }
            }
        }
    }

    public List<URI> endpoints() { return List.copyOf(clientUrls); }

    /** Stops member {@code i} (SIGSTOP): it neither answers nor fails, like a paused or partitioned host. */
    public void pause(int i) throws IOException, InterruptedException { signal(i, "-STOP"); }

    /** Lets a paused member run again (SIGCONT). */
    public void resume(int i) throws IOException, InterruptedException { signal(i, "-CONT"); }

    private void signal(int i, String sig) throws IOException, InterruptedException {
        int rc = new ProcessBuilder("kill", sig, Long.toString(members.get(i).pid())).inheritIO().start().waitFor();
        if (rc != 0) throw new IOException("kill " + sig + " of etcd member " + i + " failed: " + rc);
    }

    /** The endpoints as etcd's comma-separated list (for config files). */
    public String endpointList() { return String.join(",", clientUrls.stream().map(URI::toString).toList()); }

    public EtcdStore store() { return new EtcdStore(EtcdSettings.plain(endpoints())); }

    /** A key prefix of its own for one test class or case, so classes sharing the cluster never meet. */
    public static synchronized String prefix(String name) { return "/t" + (++prefixes) + "-" + ProcessHandle.current().pid() + "-" + name + "/"; }

    @Override
    public void close() {
        for (Process p : members) p.destroyForcibly();
        for (Process p : members) {
            try {
                p.waitFor(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        try (var walk = Files.walk(dir)) {
            walk.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
        } catch (IOException e) {
            // best effort: a temp directory
        }
    }

    /** The JUnit extension that hands every asking test class the one cluster of the run, closed when the run ends. */
    public static final class Shared implements ParameterResolver {
        @Override
        public boolean supportsParameter(ParameterContext p, ExtensionContext c) {
            return p.getParameter().getType() == EtcdCluster.class;
        }

        @Override
        public Object resolveParameter(ParameterContext p, ExtensionContext c) {
            Assumptions.assumeTrue(onPath("etcd"), "etcd is not installed (Debian: etcd-server; scripts/install-deps.sh)");
            return c.getRoot().getStore(ExtensionContext.Namespace.GLOBAL).getOrComputeIfAbsent(EtcdCluster.class, k -> {
                try {
                    return start();
                } catch (IOException e) {
                    throw new IllegalStateException("cannot start the test etcd cluster: " + e.getMessage(), e);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException(e);
                }
            }, EtcdCluster.class);
        }

        private static boolean onPath(String tool) {
            for (String d : System.getenv().getOrDefault("PATH", "").split(":")) if (Files.isExecutable(Path.of(d, tool))) return true;
            return false;
        }
    }
}
