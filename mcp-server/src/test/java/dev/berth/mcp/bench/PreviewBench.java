package dev.berth.mcp.bench;

import io.modelcontextprotocol.client.McpClient;
import io.modelcontextprotocol.client.McpSyncClient;
import io.modelcontextprotocol.client.transport.ServerParameters;
import io.modelcontextprotocol.client.transport.StdioClientTransport;
import io.modelcontextprotocol.json.jackson3.JacksonMcpJsonMapper;
import io.modelcontextprotocol.spec.McpSchema;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.Writer;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import tools.jackson.databind.json.JsonMapper;

/**
 * Benchmark (prints figures, asserts nothing): the Node dev server of PreviewE2eTest reached through an exposed port
 * (berth stdio's preview listener -> agent PORT_OPEN -> 127.0.0.1:3000 in the workspace) next to the same app run
 * directly on the host, in the same run: request latency (keep-alive GETs of a 2-byte body), download throughput
 * (a 256 MiB body), and the time from the first request to a parked workspace until its first response byte.
 * With {@code http} as the third argument the server is {@code berth http} and the exposed port is reached on the
 * MCP server's own port, at {@code /p/<id>/} and at {@code <id>.previews.test} (the Host header), the way a browser
 * reaches it there. Usage: bench/run-preview.sh [requests] [namespace|microvm] [stdio|http].
 */
public final class PreviewBench {
    public static void main(String[] args) throws Exception {
        Path jar = Path.of(args[0]);
        int n = args.length > 1 ? Integer.parseInt(args[1]) : 1000;
        String isolation = args.length > 2 ? args[2] : "namespace";
        boolean overHttp = args.length > 3 && args[3].equals("http");
        System.setProperty("jdk.httpclient.allowRestrictedHeaders", "host"); // the per-port host name, sent to 127.0.0.1
        String java = ProcessHandle.current().info().command().orElse("java");
        String app;
        try (InputStream in = PreviewBench.class.getResourceAsStream("/preview/app.js")) {
            app = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        int previewPort, directPort;
        try (ServerSocket a = new ServerSocket(0); ServerSocket b = new ServerSocket(0)) {
            previewPort = a.getLocalPort();
            directPort = b.getLocalPort();
        }
        Path scratch = Files.createTempDirectory("bench-preview-");
        Files.writeString(scratch.resolve("app.js"), app);
        Process direct = new ProcessBuilder("node", scratch.resolve("app.js").toString(), Integer.toString(directPort))
                .redirectErrorStream(true).start();
        direct.getInputStream().read(); // "listening on ..."

        Path home = Files.createTempDirectory("bench-berth-");
        Files.setPosixFilePermissions(home, PosixFilePermissions.fromString("rwx--x--x"));
        Process berthHttp = null;
        io.modelcontextprotocol.spec.McpClientTransport transport;
        if (overHttp) {
            String sha = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest("bench-token".getBytes(StandardCharsets.UTF_8)));
            Path cfg = home.resolve("berth.json");
            Files.writeString(cfg, "{\"auth\":{\"tokens\":[{\"tenant\":\"b\",\"sha256\":\"" + sha + "\"}]},\"tenants\":{\"b\":{}},"
                    + "\"http\":{\"previews\":{\"domain\":\"previews.test\"}}}");
            berthHttp = new ProcessBuilder(java, "-jar", jar.toString(), "http", "--config", cfg.toString(), "--home", home.resolve("h").toString(),
                    "--port", Integer.toString(previewPort), "--isolation", isolation).redirectErrorStream(true).start();
            var log = new BufferedReader(new InputStreamReader(berthHttp.getInputStream(), StandardCharsets.UTF_8));
            for (String line; (line = log.readLine()) != null; ) if (line.startsWith("berth http listening")) break;
            Thread.ofPlatform().daemon().start(() -> {
                try {
                    log.transferTo(Writer.nullWriter());
                } catch (IOException ignored) {
                    // gone
                }
            });
            transport = io.modelcontextprotocol.client.transport.HttpClientStreamableHttpTransport.builder("http://127.0.0.1:" + previewPort)
                    .endpoint("/mcp").requestBuilder(HttpRequest.newBuilder().header("Authorization", "Bearer bench-token"))
                    .jsonMapper(new JacksonMcpJsonMapper(JsonMapper.builder().build())).build();
        } else {
            var stdio = new StdioClientTransport(ServerParameters.builder(java)
                    .args("-Dberth.preview.port=" + previewPort, "-jar", jar.toString(), "stdio", "--home", home.toString(), "--isolation", isolation).build(),
                    new JacksonMcpJsonMapper(JsonMapper.builder().build()));
            stdio.setStdErrorHandler(line -> { });
            transport = stdio;
        }
        HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
        try (McpSyncClient client = McpClient.sync(transport).requestTimeout(Duration.ofSeconds(600)).initializationTimeout(Duration.ofSeconds(180)).build()) {
            client.initialize();
            String ws = (String) call(client, "open_workspace", Map.of("name", "bench", "isolation", isolation)).get("workspace");
            call(client, "write_file", Map.of("workspace", ws, "path", "/workspace/app.js", "content", app));
            call(client, "run", Map.of("workspace", ws, "background", true, "timeout_s", 3600, "command", "node /workspace/app.js 3000"));
            call(client, "run", Map.of("workspace", ws, "timeout_s", 120, "command", "python3 -c 'import socket, time\n"
                    + "while True:\n    try:\n        socket.create_connection((\"127.0.0.1\", 3000)).close(); break\n"
                    + "    except OSError:\n        time.sleep(0.05)'"));
            String url = (String) call(client, "expose_port", Map.of("workspace", ws, "port", 3000, "access", "link")).get("url");
            String directUrl = "http://127.0.0.1:" + directPort + "/";
            String host = null;
            if (overHttp) { // the URL names <id>.previews.test:<port>; the same exposure at <public_url>/p/<id>/ too
                host = URI.create(url).getRawAuthority();
                url = "http://127.0.0.1:" + previewPort + "/p/" + host.substring(0, host.indexOf('.')) + "/";
            }

            double[] viaLat = latency(http, url + "tiny", n, null);
            double[] bareLat = latency(http, directUrl + "tiny", n, null);
            double[] hostLat = host == null ? null : latency(http, "http://127.0.0.1:" + previewPort + "/tiny", n, host);
            int mib = 256;
            double viaTp = throughput(http, url + "big/" + mib, mib, null);
            double bareTp = throughput(http, directUrl + "big/" + mib, mib, null);
            double hostTp = host == null ? 0 : throughput(http, "http://127.0.0.1:" + previewPort + "/big/" + mib, mib, host);

            System.out.printf("%-44s %10s %10s %12s%n", isolation + " driver, node app", "p50 ms", "p99 ms", "MiB/s");
            System.out.printf("%-44s %10.3f %10.3f %12.1f%n", "direct on the host", pct(bareLat, 50), pct(bareLat, 99), bareTp);
            System.out.printf("%-44s %10.3f %10.3f %12.1f%n", overHttp ? "berth http, MCP port, /p/<id>/" : "berth stdio, own listener, /p/<id>/",
                    pct(viaLat, 50), pct(viaLat, 99), viaTp);
            if (hostLat != null) {
                System.out.printf("%-44s %10.3f %10.3f %12.1f%n", "berth http, MCP port, <id>.previews.test", pct(hostLat, 50), pct(hostLat, 99), hostTp);
            }

            // wake on traffic: park, then one request; time until the first byte of the answer
            double[] wake = new double[3];
            for (int i = 0; i < wake.length; i++) {
                call(client, "park", Map.of("workspace", ws));
                long t0 = System.nanoTime();
                HttpResponse<InputStream> r = http.send(HttpRequest.newBuilder(URI.create(url + "tiny")).build(), HttpResponse.BodyHandlers.ofInputStream());
                try (InputStream in = r.body()) {
                    in.read();
                    wake[i] = (System.nanoTime() - t0) / 1e6;
                    in.readAllBytes();
                }
                System.out.printf("%-40s %10.1f ms (status %d%s)%n", "parked -> first byte, try " + (i + 1), wake[i], r.statusCode(),
                        r.statusCode() == 502 ? ": the app did not survive park on " + isolation : "");
                if (r.statusCode() == 502) {
                    call(client, "run", Map.of("workspace", ws, "background", true, "timeout_s", 3600, "command", "node /workspace/app.js 3000"));
                    call(client, "run", Map.of("workspace", ws, "timeout_s", 120, "command", "python3 -c 'import socket, time\n"
                            + "while True:\n    try:\n        socket.create_connection((\"127.0.0.1\", 3000)).close(); break\n"
                            + "    except OSError:\n        time.sleep(0.05)'"));
                }
            }
            call(client, "close_workspace", Map.of("workspace", ws, "delete", true));
        } finally {
            direct.destroy();
            if (berthHttp != null) {
                berthHttp.toHandle().destroy();
                berthHttp.waitFor();
            }
        }
    }

    private static HttpRequest get(String url, String host) {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url));
        if (host != null) b.header("Host", host);
        return b.build();
    }

    private static double[] latency(HttpClient http, String url, int n, String host) throws Exception {
        HttpRequest req = get(url, host);
        for (int i = 0; i < Math.min(100, n); i++) http.send(req, HttpResponse.BodyHandlers.ofString()); // warm-up
        double[] t = new double[n];
        for (int i = 0; i < n; i++) {
            long t0 = System.nanoTime();
            HttpResponse<String> r = http.send(req, HttpResponse.BodyHandlers.ofString());
            if (r.statusCode() != 200) throw new IllegalStateException(url + " answered " + r.statusCode() + ": " + r.body());
            t[i] = (System.nanoTime() - t0) / 1e6;
        }
        return t;
    }

    private static double throughput(HttpClient http, String url, int mib, String host) throws Exception {
        HttpRequest req = get(url, host);
        http.send(req, HttpResponse.BodyHandlers.discarding()); // warm-up
        long t0 = System.nanoTime();
        HttpResponse<InputStream> r = http.send(req, HttpResponse.BodyHandlers.ofInputStream());
        long total = 0;
        byte[] buf = new byte[1 << 16];
        try (InputStream in = r.body()) {
            for (int k; (k = in.read(buf)) > 0; ) total += k;
        }
        if (total != (long) mib << 20) throw new IllegalStateException(url + ": " + total + " bytes");
        return total / 1048576.0 / ((System.nanoTime() - t0) / 1e9);
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> call(McpSyncClient c, String tool, Map<String, Object> args) {
        McpSchema.CallToolResult r = c.callTool(new McpSchema.CallToolRequest(tool, args));
        if (Boolean.TRUE.equals(r.isError())) throw new IllegalStateException(tool + " failed: " + r.content());
        return (Map<String, Object>) r.structuredContent();
    }

    private static double pct(double[] v, int p) {
        double[] s = v.clone();
        Arrays.sort(s);
        return s[Math.min(s.length - 1, (int) Math.ceil(p / 100.0 * s.length) - 1)];
    }
}
