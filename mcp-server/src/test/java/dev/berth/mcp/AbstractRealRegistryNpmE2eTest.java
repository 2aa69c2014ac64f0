package dev.berth.mcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.URI;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/**
 * Issue 26 item 4 with the real registry this machine reaches: {@code npm ci} of a real lockfile (a test runner's
 * whole dependency tree, a few hundred packages) inside a workspace, through the egress proxy, against the registry
 * the host's npm is configured for. No registry host is written here: the registry is {@code npm config get registry}
 * on the host, its name is resolved on the host, and the operator config allows that host on 443 and names it in
 * {@code internal_hosts} with exactly the addresses it resolved to (a /32 or /128 each: on these machines registry
 * names resolve into a documentation range, which the proxy refuses for unnamed traffic). The lockfile is generated
 * on the host at test time ({@code npm install --package-lock-only}, no {@code resolved} URLs) against the same
 * registry. The same {@code npm ci} runs on the bare host with an empty cache, so the test output carries the
 * workspace's time against the host's. Skipped, with the reason, when the host has no npm or does not reach its
 * registry. The connection-rate shaping must not refuse a single setup. The host npm's {@code cafile} (the machine's trust)
 * is copied into the workspace and named in its {@code .npmrc}.
 */
abstract class AbstractRealRegistryNpmE2eTest extends AbstractRealClientE2eTest {
    /** The top-level dependency: jest's tree is about 270 packages. */
    static final String DEPENDENCIES = "{\"jest\":\"29.7.0\"}";
    /** Least number of packages the lockfile must hold for the test to mean "a realistic tree". */
    static final int MIN_PACKAGES = 150;

    /** The app's dependencies (a level under emulation may take a smaller tree), and the least size of its tree. */
    String dependencies() { return DEPENDENCIES; }

    int minPackages() { return MIN_PACKAGES; }

    /** Checks the tree's one runnable tool: the command's output must hold {@link #toolVersion()}. */
    String toolCheck() { return "test -x node_modules/.bin/jest && node_modules/.bin/jest --version"; }

    String toolVersion() { return "29.7.0"; }

    String packageJson() {
        return "{\"name\":\"app\",\"version\":\"1.0.0\",\"private\":true,\"dependencies\":" + dependencies() + "}";
    }

    String registry;
    /** The host npm's {@code cafile} (the machine's trust, which may hold a CA of its own egress), or null. */
    String cafile;
    String lockfile;
    int packages;
    long hostMs;

    @BeforeAll
    void start() throws Exception {
        prepare("real-npm");
        Path host = Files.createDirectories(dir.resolve("host-app"));
        Files.writeString(host.resolve("package.json"), packageJson());
        Exec cfg = exec(host, 60, "npm", "config", "get", "registry");
        assumeTrue(cfg.rc == 0, "no npm on the host: " + cfg.out);
        registry = cfg.out.strip();
        if (!registry.endsWith("/")) registry += "/";
        Exec ca = exec(host, 60, "npm", "config", "get", "cafile");
        String caPath = ca.out.strip();
        if (ca.rc == 0 && caPath.startsWith("/") && Files.isRegularFile(Path.of(caPath))) cafile = Files.readString(Path.of(caPath));
        String name = URI.create(registry).getHost();
        assumeTrue(name != null && !name.isEmpty(), "the host's npm registry '" + registry + "' names no host");
        InetAddress[] addrs;
        try {
            addrs = InetAddress.getAllByName(name);
        } catch (UnknownHostException e) {
            assumeTrue(false, "the host's npm registry does not resolve on the host: " + e.getMessage());
            return;
        }
        Exec lock = exec(host, 300, "npm", "install", "--package-lock-only", "--omit-lockfile-registry-resolved",
                "--no-audit", "--no-fund", "--loglevel=error", "--cache", dir.resolve("host-lock-cache").toString());
        assumeTrue(lock.rc == 0, "the host does not reach its npm registry (npm install --package-lock-only exited "
                + lock.rc + "): " + lock.out);
        lockfile = Files.readString(host.resolve("package-lock.json"));
        packages = (int) Arrays.stream(lockfile.split("\"node_modules/", -1)).count() - 1;
        assertTrue(packages >= minPackages(), "the generated lockfile holds " + packages + " packages");

        // the bare host, with an empty cache: the baseline the workspace's time is set against
        long t0 = System.nanoTime();
        Exec ci = exec(host, 900, "npm", "ci", "--no-audit", "--no-fund", "--loglevel=error",
                "--cache", dir.resolve("host-ci-cache").toString());
        hostMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        assumeTrue(ci.rc == 0, "npm ci on the bare host failed (exit " + ci.rc + "), so the registry is not usable from here: " + ci.out);

        String ranges = Arrays.stream(addrs).map(a -> "\"" + a.getHostAddress() + (a instanceof Inet4Address ? "/32" : "/128") + "\"")
                .distinct().collect(Collectors.joining(", "));
        String config = """
                {"egress": {
                   "allow": [{"host": "%1$s", "ports": [443]}],
                   "internal_hosts": [{"host": "%1$s", "ranges": [%2$s]}],
                   "limits": {"header_timeout_ms": %3$d}}}
                """.formatted(name, ranges, HEADER_TIMEOUT_MS);
        System.out.println("[real-npm] operator egress config: " + config.strip().replace('\n', ' '));
        Path cfgFile = dir.resolve("berth.json");
        Files.writeString(cfgFile, config);
        Path home = Files.createDirectories(dir.resolve("home"));
        level().prepare(home);
        mcp = McpBridge.stdio(home, level().args("--config", cfgFile.toString()));
        mcp.connect();
    }

    @Test
    void npmCi_realLockfileFromTheRealRegistry_installsThroughTheProxy() throws Exception {
        String ws = ok("open_workspace", level().open(Map.of())).path("workspace").asString();
        ok("write_file", Map.of("workspace", ws, "path", "app/package.json", "content", packageJson()));
        ok("write_file", Map.of("workspace", ws, "path", "app/package-lock.json", "content", lockfile));
        // the host npm's trust goes along: a microVM's image has Debian's public roots only, not the machine's own CA
        String trust = "";
        if (cafile != null) {
            ok("write_file", Map.of("workspace", ws, "path", "host-ca.crt", "content", cafile));
            trust = "cafile=/workspace/host-ca.crt\n";
        }
        ok("write_file", Map.of("workspace", ws, "path", "app/.npmrc", "content",
                "registry=" + registry + "\n" + trust + "audit=false\nfund=false\nupdate-notifier=false\n"));
        long t0 = System.nanoTime();
        JsonNode r = mcp.okWithin("run", Map.of("workspace", ws, "timeout_s", 1800, "command",
                "cd app && s=$(date +%s%N); env -u NO_PROXY -u no_proxy HOME=/workspace npm ci --no-audit --no-fund --loglevel=error 2>&1;"
                        + " rc=$?; e=$(date +%s%N); echo \"npm_ci_ms=$(( (e - s) / 1000000 ))\";"
                        + " echo \"top_level=$(ls node_modules | wc -l)\";"
                        + " " + toolCheck() + "; exit $rc"), 1_900_000);
        long callMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        SchemaCheck.assertValid("run", r);
        results.add(r.toString());
        String out = r.path("stdout").asString();
        System.out.println("[real-npm] run result: " + r);
        assertEquals(0, r.path("exit_code").asInt(), () -> r + "\negress records that did not end complete:\n" + unfinishedEgress());
        String denied = r.path("egress_denied").toString();
        assertFalse(denied.contains("per second"), "the connection-rate shaping refused setups: " + denied);
        assertFalse(denied.contains("quota"), "a byte quota refused egress: " + denied);
        assertTrue(out.contains(toolVersion()), "the tree's tool is not runnable from node_modules: " + r);
        long wsMs = Long.parseLong(out.lines().filter(l -> l.startsWith("npm_ci_ms=")).findFirst().orElseThrow().substring(10));
        System.out.println("[real-npm] egress records that did not end complete: " + unfinishedEgress());
        System.out.printf("[real-npm] %s level: npm ci of %d packages: workspace %d ms (tool call %d ms), bare host %d ms, ratio %.2f%n",
                getClass().getSimpleName(), packages, wsMs, callMs, hostMs, (double) wsMs / hostMs);
    }

    /** The egress records of the run that did not end complete (their close reasons say how a connection ended). */
    String unfinishedEgress() {
        try (var files = Files.list(dir.resolve("home/audit"))) {
            StringBuilder sb = new StringBuilder();
            for (Path f : files.filter(p -> p.getFileName().toString().endsWith(".log")).toList()) {
                Files.readAllLines(f).stream().filter(l -> l.contains("\"type\":\"egress\"") && !l.contains("\"close_reason\":\"complete\""))
                        .limit(40).forEach(l -> sb.append(l).append('\n'));
            }
            return sb.toString();
        } catch (IOException e) {
            return e.toString();
        }
    }

    record Exec(int rc, String out) { }

    /** Runs {@code cmd} on the host in {@code cwd}; rc -1 when it could not start or took longer than {@code timeoutS}. */
    static Exec exec(Path cwd, int timeoutS, String... cmd) throws IOException, InterruptedException {
        Process p;
        try {
            p = new ProcessBuilder(new ArrayList<>(List.of(cmd))).directory(cwd.toFile()).redirectErrorStream(true).start();
        } catch (IOException e) {
            return new Exec(-1, e.getMessage());
        }
        p.getOutputStream().close();
        byte[][] buf = new byte[1][];
        Thread reader = Thread.ofVirtual().start(() -> {
            try {
                buf[0] = p.getInputStream().readAllBytes();
            } catch (IOException e) {
                buf[0] = e.toString().getBytes(StandardCharsets.UTF_8);
            }
        });
        if (!p.waitFor(timeoutS, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            reader.join();
            return new Exec(-1, "timed out after " + timeoutS + " s");
        }
        reader.join();
        String out = new String(buf[0], StandardCharsets.UTF_8);
        return new Exec(p.exitValue(), out.length() > 4000 ? out.substring(out.length() - 4000) : out);
    }
}
