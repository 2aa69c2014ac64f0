package dev.berth.mcp;

import dev.berth.engine.TestPki;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import tools.jackson.databind.JsonNode;

/**
 * Benchmark (issue 16): {@code npm install} of a project with many dependencies from a loopback Verdaccio, three ways
 * in the same run, rounds interleaved: the host's npm straight to the registry (no sandbox, no proxy), the same npm
 * inside a namespace workspace through the egress tunnel (end-to-end TLS), and inside a workspace with the npm registry
 * rule (interception, read-only checks, release-age filtering of every packument and the check of every tarball).
 * Each install starts from an empty cache and no node_modules. Prints medians; asserts nothing.
 *
 * <p>{@code bench/run-npm-install.sh [packages] [rounds]} (after scripts/install-deps.sh).
 */
public final class NpmInstallBench {
    private NpmInstallBench() {}

    public static void main(String[] args) throws Exception {
        int packages = args.length > 0 ? Integer.parseInt(args[0]) : 200;
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 3;
        Path dir = Files.createTempDirectory("berth-npm-bench-");
        Files.setPosixFilePermissions(dir, java.nio.file.attribute.PosixFilePermissions.fromString("rwx--x--x"));
        TestPki.LocalhostFiles tls = TestPki.localhost(dir);
        Path cert = tls.cert();
        Path key = tls.key();
        Path root = tls.root();
        Instant old = Instant.parse("2020-01-01T00:00:00Z");
        Instant fresh = Instant.now().minus(1, ChronoUnit.HOURS);
        List<VerdaccioRegistry.Version> versions = new ArrayList<>();
        StringBuilder deps = new StringBuilder();
        for (int i = 0; i < packages; i++) {
            String name = "bench-dep-" + i;
            versions.add(new VerdaccioRegistry.Version(name, "1.0.0", old, Map.of()));
            if (i % 2 == 0) versions.add(new VerdaccioRegistry.Version(name, "1.1.0", fresh, Map.of())); // hidden by the rule
            deps.append(i == 0 ? "" : ",").append('"').append(name).append("\":\"^1.0.0\"");
        }
        String packageJson = "{\"name\":\"bench-app\",\"version\":\"1.0.0\",\"private\":true,\"dependencies\":{" + deps + "}}";
        try (VerdaccioRegistry reg = VerdaccioRegistry.start(dir.resolve("verdaccio"), cert, key, versions)) {
            String url = "https://localhost:" + reg.port + "/";
            String allow = "\"allow\": [{\"host\": \"localhost\", \"ports\": [443, " + reg.port + "]}], \"tls\": {\"upstreamTrust\": [\"" + root
                    + "\"], \"ports\": [443, " + reg.port + "]}, \"unsafe\": {\"unsafeAllowLoopbackUpstreams\": true}";
            Path tunnelCfg = Files.writeString(dir.resolve("tunnel.json"), "{\"egress\": {" + allow + "}}");
            Path rulesCfg = Files.writeString(dir.resolve("rules.json"), "{\"egress\": {" + allow
                    + ", \"registryRules\": {\"npm\": {\"hosts\": [\"localhost\"], \"minReleaseAgeDays\": 7}}}}");
            Path host = Files.createDirectories(dir.resolve("host-app"));
            Files.writeString(host.resolve("package.json"), packageJson);
            try (McpBridge tunnel = McpBridge.stdio(Files.createDirectories(dir.resolve("home-tunnel")), "--isolation", "namespace", "--config",
                    tunnelCfg.toString());
                 McpBridge rules = McpBridge.stdio(Files.createDirectories(dir.resolve("home-rules")), "--isolation", "namespace", "--config",
                         rulesCfg.toString())) {
                tunnel.connect();
                rules.connect();
                String wsT = prepare(tunnel, packageJson, url, Files.readString(root));
                String wsR = prepare(rules, packageJson, url, Files.readString(root));
                String install = "cd app && rm -rf node_modules package-lock.json /workspace/.cache && start=$(date +%s%N) && env -u NO_PROXY"
                        + " -u no_proxy HOME=/workspace npm install --cache /workspace/.cache --no-audit --no-fund --loglevel=error >/workspace/log 2>&1;"
                        + " code=$?; end=$(date +%s%N); echo $code $(( (end - start) / 1000000 )); ls node_modules | wc -l";
                Map<String, List<Long>> ms = new HashMap<>();
                for (int r = 0; r < rounds; r++) {
                    ms.computeIfAbsent("direct", k -> new ArrayList<>()).add(direct(host, url, root, dir.resolve("host-cache-" + r)));
                    ms.computeIfAbsent("tunnel", k -> new ArrayList<>()).add(inside(tunnel, wsT, install));
                    ms.computeIfAbsent("rules", k -> new ArrayList<>()).add(inside(rules, wsR, install));
                    System.out.println("round " + (r + 1) + " ms: " + ms); // kept if a later round fails
                }
                long d = median(ms.get("direct"));
                System.out.printf("npm install of %d dependencies (%d with a fresh version the rule hides), %d rounds, median ms:%n", packages,
                        (packages + 1) / 2, rounds);
                for (String k : List.of("direct", "tunnel", "rules")) {
                    long m = median(ms.get(k));
                    System.out.printf("  %-7s %7d ms  %.2fx direct   all: %s%n", k, m, (double) m / d, ms.get(k));
                }
            }
        } finally {
            try {
                dev.berth.engine.spi.Trees.delete(dir);
            } catch (java.io.IOException e) {  // a server still shutting down; never hide the bench's own failure
                System.err.println("could not delete " + dir + ": " + e);
            }
        }
    }

    private static String prepare(McpBridge mcp, String packageJson, String url, String rootPem) throws Exception {
        String ws = mcp.ok("open_workspace", Map.of()).path("workspace").asString();
        mcp.ok("write_file", Map.of("workspace", ws, "path", "app/package.json", "content", packageJson));
        mcp.ok("write_file", Map.of("workspace", ws, "path", "test-root.pem", "content", rootPem));
        // cafile for the tunnel (end-to-end TLS to the test CA); with interception the engine's NPM_CONFIG_CAFILE wins
        mcp.ok("write_file", Map.of("workspace", ws, "path", "app/.npmrc", "content", "registry=" + url
                + "\ncafile=/workspace/test-root.pem\naudit=false\nfund=false\nupdate-notifier=false\n"));
        return ws;
    }

    private static long inside(McpBridge mcp, String ws, String install) throws Exception {
        // a 200-package install on a loaded machine can take longer than the client's default 10 min request timeout
        JsonNode r = mcp.okWithin("run", Map.of("workspace", ws, "command", install, "timeout_s", 3600), 3_700_000L);
        String[] out = r.path("stdout").asString().trim().split("\\s+");
        if (!out[0].equals("0")) throw new IllegalStateException("npm install failed in the workspace: " + r);
        return Long.parseLong(out[1]);
    }

    private static long direct(Path app, String url, Path root, Path cache) throws Exception {
        Files.deleteIfExists(app.resolve("package-lock.json"));
        dev.berth.engine.spi.Trees.delete(app.resolve("node_modules"));
        long t0 = System.nanoTime();
        ProcessBuilder pb = new ProcessBuilder("npm", "install", "--registry", url, "--cafile", root.toString(), "--cache", cache.toString(),
                "--no-audit", "--no-fund", "--loglevel=error").directory(app.toFile()).redirectErrorStream(true);
        pb.environment().put("HOME", app.toString());
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes());
        if (p.waitFor() != 0) throw new IllegalStateException("npm install on the host failed: " + out);
        return (System.nanoTime() - t0) / 1_000_000;
    }

    private static long median(List<Long> xs) {
        long[] a = xs.stream().mapToLong(Long::longValue).sorted().toArray();
        return a[a.length / 2];
    }
}
