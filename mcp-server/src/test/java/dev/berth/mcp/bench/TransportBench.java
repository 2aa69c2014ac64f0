package dev.berth.mcp.bench;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.Writer;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Benchmark (prints figures, asserts nothing): sequential throughput of {@code ping} and of {@code run("true")} on
 * an open namespace workspace, over stdio and Streamable HTTP, through the hardened JSON-RPC boundary and through the
 * old path ({@code -Dberth.bench.unhardenedTransport=true}: the SDK's stdio transport, no JSON-RPC guard on HTTP), in
 * the same run, alternating old and hardened servers round by round. Usage: {@code bench/run-transport.sh [pings] [runs] [rounds]}.
 */
public final class TransportBench {
    static final JsonMapper JSON = JsonMapper.builder().build();
    static final String OLD = "-Dberth.bench.unhardenedTransport=true";
    static final String INIT = "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\","
            + "\"capabilities\":{},\"clientInfo\":{\"name\":\"bench\",\"version\":\"1\"}}}";
    static final String INITIALIZED = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}";

    /** One server under test: send a message, get the answer to it. */
    interface Wire extends AutoCloseable {
        JsonNode call(String json) throws Exception;
    }

    public static void main(String[] args) throws Exception {
        Path jar = Path.of(args[0]);
        int pings = args.length > 1 ? Integer.parseInt(args[1]) : 2000;
        int runs = args.length > 2 ? Integer.parseInt(args[2]) : 200;
        int rounds = args.length > 3 ? Integer.parseInt(args[3]) : 3;
        String java = ProcessHandle.current().info().command().orElse("java");
        Path dir = Files.createTempDirectory("bench-transport-");
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx--x--x"));
        // "HTTP, hardened" goes through the preview listener that owns the public port (berth http's default); the last
        // row is Tomcat on the port itself (BERTH_PREVIEW_PORT set: previews on a port of their own)
        String[] labels = {"stdio, SDK transport (old)", "stdio, hardened", "HTTP, no guard (old)", "HTTP, hardened", "HTTP, hardened, no front"};
        List<List<double[]>> results = new ArrayList<>();
        for (int i = 0; i < labels.length; i++) results.add(new ArrayList<>());
        for (int round = 0; round < rounds; round++) {
            for (int k = 0; k < labels.length; k++) {
                boolean old = k % 2 == 0 && k < 4;
                Path home = Files.createDirectories(dir.resolve("home-" + round + "-" + k));
                try (Wire w = k < 2 ? stdio(java, jar, home, old) : http(java, jar, dir, home, old, k == 4)) {
                    results.get(k).add(measure(w, pings, runs));
                }
            }
        }
        System.out.printf("%-28s %12s %12s   (%d pings, %d runs, best of %d rounds)%n", "path", "ping/s", "run(true)/s", pings, runs, rounds);
        for (int k = 0; k < labels.length; k++) {
            double ping = results.get(k).stream().mapToDouble(r -> r[0]).max().orElse(0);
            double run = results.get(k).stream().mapToDouble(r -> r[1]).max().orElse(0);
            System.out.printf("%-28s %12.0f %12.1f%n", labels[k], ping, run);
        }
    }

    /** Returns {pings per second, runs per second}. */
    static double[] measure(Wire w, int pings, int runs) throws Exception {
        String ws = w.call(tool(1, "open_workspace", "{}")).path("result").path("structuredContent").path("workspace").asString();
        String run = "{\"workspace\":\"" + ws + "\",\"command\":\"true\"}";
        for (int i = 0; i < 300; i++) w.call(ping(10 + i)); // warm-up: JIT on both sides
        for (int i = 0; i < 20; i++) w.call(tool(400 + i, "run", run));
        long t0 = System.nanoTime();
        for (int i = 0; i < pings; i++) w.call(ping(1000 + i));
        double pingRate = pings / ((System.nanoTime() - t0) / 1e9);
        t0 = System.nanoTime();
        for (int i = 0; i < runs; i++) {
            JsonNode r = w.call(tool(100_000 + i, "run", run));
            if (r.path("result").path("structuredContent").path("exit_code").asInt(-1) != 0) throw new IllegalStateException("run failed: " + r);
        }
        double runRate = runs / ((System.nanoTime() - t0) / 1e9);
        w.call(tool(2, "close_workspace", "{\"workspace\":\"" + ws + "\"}"));
        return new double[] {pingRate, runRate};
    }

    static String ping(int id) {
        return "{\"jsonrpc\":\"2.0\",\"id\":" + id + ",\"method\":\"ping\"}";
    }

    static String tool(int id, String name, String args) {
        return "{\"jsonrpc\":\"2.0\",\"id\":" + id + ",\"method\":\"tools/call\",\"params\":{\"name\":\"" + name + "\",\"arguments\":" + args + "}}";
    }

    static Wire stdio(String java, Path jar, Path home, boolean old) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(java));
        if (old) cmd.add(OLD);
        cmd.addAll(List.of("-jar", jar.toString(), "stdio", "--home", home.toString(), "--isolation", "namespace"));
        Process p = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.DISCARD).start();
        OutputStream in = p.getOutputStream();
        BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        Wire w = new Wire() {
            @Override
            public JsonNode call(String json) throws Exception {
                in.write((json + "\n").getBytes(StandardCharsets.UTF_8));
                in.flush();
                String id = JSON.readTree(json).path("id").toString();
                while (true) {
                    String line = out.readLine();
                    if (line == null) throw new IllegalStateException("server closed stdout");
                    JsonNode m = JSON.readTree(line);
                    if (m.path("id").toString().equals(id)) return m;
                }
            }

            @Override
            public void close() throws Exception {
                in.close();
                p.waitFor();
            }
        };
        w.call(INIT);
        in.write((INITIALIZED + "\n").getBytes(StandardCharsets.UTF_8));
        in.flush();
        return w;
    }

    static Wire http(String java, Path jar, Path dir, Path home, boolean old, boolean noFront) throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        String token = "bench-token";
        String sha = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(token.getBytes(StandardCharsets.UTF_8)));
        Path cfg = home.resolve("berth.json");
        Files.writeString(cfg, "{\"auth\":{\"tokens\":[{\"tenant\":\"b\",\"sha256\":\"" + sha + "\"}]},\"tenants\":{\"b\":{}}}");
        List<String> cmd = new ArrayList<>(List.of(java));
        if (old) cmd.add(OLD);
        cmd.addAll(List.of("-jar", jar.toString(), "http", "--config", cfg.toString(), "--home", home.resolve("h").toString(),
                "--port", String.valueOf(port), "--isolation", "namespace"));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        if (noFront) {
            try (ServerSocket s = new ServerSocket(0)) {
                pb.environment().put("BERTH_PREVIEW_PORT", Integer.toString(s.getLocalPort()));
            }
        }
        Process p = pb.start();
        BufferedReader log = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        for (String line; (line = log.readLine()) != null; ) if (line.startsWith("berth http listening")) break;
        Thread.ofPlatform().daemon().start(() -> {
            try {
                log.transferTo(Writer.nullWriter());
            } catch (IOException ignored) {
                // gone
            }
        });
        HttpClient client = HttpClient.newHttpClient();
        URI uri = URI.create("http://127.0.0.1:" + port + "/mcp");
        String[] session = {null};
        Wire w = new Wire() {
            @Override
            public JsonNode call(String json) throws Exception {
                HttpRequest.Builder b = HttpRequest.newBuilder(uri).header("Authorization", "Bearer " + token)
                        .header("Content-Type", "application/json").header("Accept", "application/json, text/event-stream")
                        .POST(HttpRequest.BodyPublishers.ofString(json));
                if (session[0] != null) b.header("Mcp-Session-Id", session[0]);
                HttpResponse<String> r;
                try {
                    r = client.send(b.build(), HttpResponse.BodyHandlers.ofString());
                } catch (IOException e) {
                    // Tomcat closes a keep-alive connection after 100 requests; a request racing that close is resent
                    r = client.send(b.build(), HttpResponse.BodyHandlers.ofString());
                }
                if (session[0] == null) session[0] = r.headers().firstValue("Mcp-Session-Id").orElse(null);
                String body = r.body();
                for (String line : body.split("\n")) if (line.startsWith("data:")) return JSON.readTree(line.substring(5).trim());
                return body.isBlank() ? JSON.createObjectNode() : JSON.readTree(body);
            }

            @Override
            public void close() throws Exception {
                p.toHandle().destroy();
                p.waitFor();
            }
        };
        w.call(INIT);
        w.call(INITIALIZED);
        return w;
    }
}
