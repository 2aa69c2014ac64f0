package dev.berth.mcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import tools.jackson.databind.JsonNode;

/**
 * expose_port end to end on the namespace driver, over stdio through the official TypeScript client: a real Node dev
 * server (page + WebSocket echo + SSE + chunked) and python's http.server inside a workspace, reached with curl,
 * raw sockets and headless Chromium through the preview listener; access rules, bad input, wake on traffic, and the
 * exposure surviving a server restart on the same URL.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class PreviewE2eTest {
    private Path home;
    private McpBridge mcp;
    private int previewPort;
    private String ws;

    @BeforeAll
    void start() throws Exception {
        home = Files.createTempDirectory("berth-e2e-preview-");
        try (ServerSocket s = new ServerSocket(0)) {
            previewPort = s.getLocalPort();
        }
        mcp = server();
        ws = ok("open_workspace", Map.of("name", "preview", "isolation", "namespace")).path("workspace").asString();
        String app = new String(PreviewE2eTest.class.getResourceAsStream("/preview/app.js").readAllBytes(), StandardCharsets.UTF_8);
        ok("write_file", Map.of("workspace", ws, "path", "/workspace/app.js", "content", app));
        ok("write_file", Map.of("workspace", ws, "path", "/workspace/site/hello.txt", "content", "hello from python\n"));
        startServers();
    }

    private McpBridge server() throws IOException {
        McpBridge b = McpBridge.stdioCommand(List.of(McpBridge.javaBin(), "-Dberth.preview.port=" + previewPort, "-jar",
                McpBridge.JAR.toString(), "stdio", "--home", home.toString(), "--isolation", "namespace"), Map.of());
        b.connect();
        return b;
    }

    /** Both dev servers as background runs; returns once both listen (checked from inside, no fixed sleep). */
    private void startServers() throws IOException {
        String node = ok("run", Map.of("workspace", ws, "background", true, "timeout_s", 3600, "command", "node /workspace/app.js 3000 >> /workspace/node.log 2>&1")).path("process").asString();
        String py = ok("run", Map.of("workspace", ws, "background", true, "timeout_s", 3600, "command", "cd /workspace/site && exec python3 -m http.server 8000 --bind 127.0.0.1")).path("process").asString();
        JsonNode r = ok("run", Map.of("workspace", ws, "timeout_s", 60, "command",
                "python3 -c 'import socket, time\nfor p in (3000, 8000):\n    while True:\n        try:\n            socket.create_connection((\"127.0.0.1\", p)).close(); break\n        except OSError:\n            time.sleep(0.05)\nprint(\"up\")'"));
        assertEquals("up\n", r.path("stdout").asString(), () -> {
            try {
                return r + "\nnode: " + ok("run", Map.of("workspace", ws, "process", node)) + "\npython: " + ok("run", Map.of("workspace", ws, "process", py));
            } catch (IOException e) {
                return r + " " + e;
            }
        });
    }

    @AfterAll
    void stop() throws IOException {
        if (mcp != null) mcp.close();
        HomeLeaks.assertNone(home); // a leak is named here, before the delete
        dev.berth.engine.spi.Trees.delete(home);
    }

    private JsonNode ok(String tool, Map<String, Object> args) throws IOException {
        JsonNode r = mcp.call(tool, args);
        assertFalse(r.path("isError").asBoolean(), () -> tool + " failed: " + r);
        JsonNode sc = r.path("structuredContent");
        SchemaCheck.assertValid(tool, sc);
        return sc;
    }

    private String error(String tool, Map<String, Object> args) throws IOException {
        JsonNode r = mcp.call(tool, args);
        assertTrue(r.path("isError").asBoolean(), () -> tool + " should have failed: " + r);
        return r.path("content").get(0).path("text").asString();
    }

    private static String[] curl(String... args) throws Exception {
        return Curl.call(args);
    }

    private static String withoutQuery(String url) {
        int q = url.indexOf('?');
        return q < 0 ? url : url.substring(0, q);
    }

    /** Sends raw bytes to the preview listener and returns everything it answers until it closes. */
    private String raw(String request) throws IOException {
        try (Socket s = new Socket("127.0.0.1", previewPort)) {
            s.setSoTimeout(30_000);
            s.getOutputStream().write(request.getBytes(StandardCharsets.ISO_8859_1));
            s.getOutputStream().flush();
            return new String(s.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1);
        }
    }

    @Test
    @Order(1)
    void tenantAccess_tokenOnceSetsCookie_withoutItRefused() throws Exception {
        JsonNode e = ok("expose_port", Map.of("workspace", ws, "port", 8000));
        assertEquals("tenant", e.path("access").asString());
        assertTrue(e.path("expires_at").isNull(), e.toString());
        String url = e.path("url").asString();
        assertTrue(url.startsWith("http://127.0.0.1:" + previewPort + "/p/") && url.contains("?berth_token="), url);
        String bare = withoutQuery(url);

        String[] none = curl(bare + "hello.txt");
        assertEquals("401", none[1], none[0]);
        assertTrue(none[0].contains("needs the tenant's token"), none[0]);
        String[] wrong = curl("-H", "Authorization: Bearer not-the-token", bare + "hello.txt");
        assertEquals("401", wrong[1], wrong[0]);

        Path jar = Files.createTempFile(home, "cookies", ".txt");
        String[] first = curl("-c", jar.toString(), url);
        assertEquals("303", first[1], first[0]);
        String[] page = curl("-b", jar.toString(), bare + "hello.txt");
        assertEquals("200", page[1], page[0]);
        assertEquals("hello from python\n", page[0]);
        // keep-alive: two requests on one curl invocation (python's HTTP/1.0 server closes after each; both arrive)
        String[] two = curl("-b", jar.toString(), bare + "hello.txt", bare + "hello.txt");
        assertEquals("hello from python\nhello from python\n", two[0].replace("\n200", ""), two[0]);

        JsonNode list = ok("list_workspaces", Map.of());
        JsonNode mine = null;
        for (JsonNode w : list.path("workspaces")) if (w.path("workspace").asString().equals(ws)) mine = w;
        assertEquals(8000, mine.path("exposed_ports").get(0).path("port").asInt(), String.valueOf(mine));
    }

    @Test
    @Order(2)
    void linkAccess_headersRewritten_sseChunkedAndUploadRelayed() throws Exception {
        JsonNode e = ok("expose_port", Map.of("workspace", ws, "port", 3000, "access", "link", "ttl_s", 600));
        String url = e.path("url").asString();
        assertFalse(url.contains("berth_token"), url);
        assertTrue(URI.create(url).getPath().matches("/p/[a-z2-7]{32}/"), url);
        assertFalse(e.path("expires_at").isNull());

        String[] h = curl("-H", "Origin: http://127.0.0.1:" + previewPort, "-H", "Authorization: Basic app-own", url + "headers");
        assertEquals("200", h[1], h[0]);
        JsonNode seen = McpBridge.JSON.readTree(h[0]).path("headers");
        assertEquals("localhost:3000", seen.path("host").asString(), h[0]);
        assertEquals("http://localhost:3000", seen.path("origin").asString(), h[0]);
        assertEquals("127.0.0.1:" + previewPort, seen.path("x-forwarded-host").asString(), h[0]);
        assertEquals("http", seen.path("x-forwarded-proto").asString(), h[0]);
        assertEquals("127.0.0.1", seen.path("x-forwarded-for").asString(), h[0]);
        assertEquals(URI.create(url).getPath().replaceAll("/$", ""), seen.path("x-forwarded-prefix").asString(), h[0]);
        assertEquals("Basic app-own", seen.path("authorization").asString(), "an app's own Authorization passes on a link");

        String[] sse = curl("-N", url + "sse");
        assertEquals("200", sse[1]);
        assertEquals("data: tick 1\n\ndata: tick 2\n\ndata: tick 3\n\n", sse[0]);
        String[] chunked = curl(url + "chunked");
        assertEquals("part1-part2-end", chunked[0]);

        byte[] big = new byte[3 << 20];
        Path body = Files.write(home.resolve("upload.bin"), big);
        String[] up = curl("--data-binary", "@" + body, url + "upload");
        assertEquals("got " + big.length, up[0], () -> up[1] + " node log: " + nodeLog());
        webSocketEcho(URI.create(url).getPath() + "ws");
        String[] upChunked = curl("-H", "Transfer-Encoding: chunked", "--data-binary", "@" + body, url + "upload");
        assertEquals("got " + big.length, upChunked[0], upChunked[1]);
    }

    private String nodeLog() {
        try {
            return mcp.call("run", Map.of("workspace", ws, "command", "cat /workspace/node.log; ps -ef | grep -c node")).toString();
        } catch (IOException e) {
            return e.toString();
        }
    }

    /** A WebSocket handshake and one masked text frame by hand: the echo comes back through the relay. */
    private void webSocketEcho(String path) throws IOException {
        try (Socket s = new Socket("127.0.0.1", previewPort)) {
            s.setSoTimeout(30_000);
            OutputStream out = s.getOutputStream();
            out.write(("GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + previewPort + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                    + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nOrigin: http://127.0.0.1:" + previewPort + "\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = s.getInputStream();
            String status = firstLine(in);
            assertTrue(status.startsWith("HTTP/1.1 101"), status);
            String line;
            boolean accept = false;
            while (!(line = firstLine(in)).isBlank()) accept |= line.equals("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r");
            assertTrue(accept, "the app's handshake answer arrives unchanged");
            byte[] msg = "hello over ws".getBytes(StandardCharsets.US_ASCII);
            byte[] mask = {1, 2, 3, 4};
            byte[] frame = new byte[6 + msg.length];
            frame[0] = (byte) 0x81;
            frame[1] = (byte) (0x80 | msg.length);
            System.arraycopy(mask, 0, frame, 2, 4);
            for (int i = 0; i < msg.length; i++) frame[6 + i] = (byte) (msg[i] ^ mask[i % 4]);
            out.write(frame);
            out.flush();
            byte[] echo = in.readNBytes(2 + msg.length);
            assertEquals((byte) 0x81, echo[0]);
            assertEquals(msg.length, echo[1]);
            assertEquals("hello over ws", new String(echo, 2, msg.length, StandardCharsets.US_ASCII));
        }
    }

    @Test
    @Order(3)
    void chromium_loadsThePageAndItsWebSocketEchoes() throws Exception {
        JsonNode e = ok("expose_port", Map.of("workspace", ws, "port", 3000, "access", "link"));
        String url = e.path("url").asString();
        try (HeadlessChromium browser = new HeadlessChromium(home, url)) {
            // the page's script opens a WebSocket through the preview and writes the echo into the DOM
            String echo = browser.evaluate("new Promise(r => { const f = () => { const e = document.getElementById('echo');"
                    + " if (e) r(e.textContent); else setTimeout(f, 50); }; f(); })", java.time.Duration.ofSeconds(60));
            assertEquals("echo:ping-berth", echo);
        }
    }

    @Test
    @Order(4)
    void badInput_nothingListensUnknownIdSmugglingOversizedHeadersLimits() throws Exception {
        JsonNode dead = ok("expose_port", Map.of("workspace", ws, "port", 9, "access", "link"));
        long t0 = System.nanoTime();
        String[] r = curl(dead.path("url").asString());
        assertEquals("502", r[1], r[0]);
        assertTrue(r[0].contains("nothing listens on port 9"), r[0]);
        assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(30), "a 502, not a hang");

        String[] unknown = curl("http://127.0.0.1:" + previewPort + "/p/" + "a".repeat(32) + "/");
        assertEquals("404", unknown[1]);
        String[] elsewhere = curl("http://127.0.0.1:" + previewPort + "/mcp");
        assertEquals("404", elsewhere[1]);

        JsonNode link = ok("expose_port", Map.of("workspace", ws, "port", 3000, "access", "link"));
        String path = URI.create(link.path("url").asString()).getPath();
        String smuggle = raw("POST " + path + "upload HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /admin HTTP/1.1\r\n\r\n");
        // refused before routing, by our check or by Netty's decoder (which names the same shape)
        assertTrue(smuggle.startsWith("HTTP/1.1 400") && smuggle.contains("Transfer-Encoding") && !smuggle.contains("/admin"), smuggle);
        String twoLengths = raw("POST " + path + "upload HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nContent-Length: 5\r\n\r\nabcde");
        assertTrue(twoLengths.startsWith("HTTP/1.1 400"), twoLengths);
        String badTe = raw("POST " + path + "upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n");
        assertTrue(badTe.startsWith("HTTP/1.1 400"), badTe);
        String huge = raw("GET " + path + "headers HTTP/1.1\r\nHost: x\r\nX-Big: " + "a".repeat(40_000) + "\r\n\r\n");
        assertTrue(huge.startsWith("HTTP/1.1 431"), huge.substring(0, Math.min(200, huge.length())));

        // 1,000 concurrent connections to one port: the first 128 are carried, the rest refused with 503 at once
        List<Socket> socks = new ArrayList<>();
        int ok = 0, refused = 0;
        try {
            for (int i = 0; i < 1000; i++) {
                Socket s = new Socket("127.0.0.1", previewPort);
                s.setSoTimeout(60_000);
                s.getOutputStream().write(("GET " + path + "hold HTTP/1.1\r\nHost: x\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
                socks.add(s);
            }
            for (Socket s : socks) {
                String line = firstLine(s.getInputStream());
                if (line.startsWith("HTTP/1.1 200")) ok++;
                else if (line.startsWith("HTTP/1.1 503")) refused++;
            }
        } finally {
            for (Socket s : socks) s.close();
        }
        assertEquals(128, ok, "carried");
        assertEquals(872, refused, "refused cleanly");
        // the slots come back once those connections close
        String[] after = curl(link.path("url").asString() + "chunked");
        for (int i = 0; i < 200 && !"200".equals(after[1]); i++) after = curl(link.path("url").asString() + "chunked");
        assertEquals("200", after[1], after[0]);
    }

    private static String firstLine(InputStream in) throws IOException {
        StringBuilder sb = new StringBuilder();
        int c;
        while ((c = in.read()) >= 0 && c != '\n') sb.append((char) c);
        return sb.toString();
    }

    @Test
    @Order(5)
    void closedExposure_expired_unexposed_404() throws Exception {
        JsonNode e = ok("expose_port", Map.of("workspace", ws, "port", 3000, "access", "link", "ttl_s", 1));
        String url = e.path("url").asString();
        // time must pass for the code under test: sleep until just past the expiry instant the server named
        java.time.Instant exp = java.time.Instant.parse(e.path("expires_at").asString());
        java.time.Duration left = java.time.Duration.between(java.time.Instant.now(), exp.plusMillis(50));
        if (left.isPositive()) Thread.sleep(left);
        String[] expired = curl(url + "chunked");
        assertEquals("404", expired[1], expired[0]);
        assertTrue(expired[0].contains("expired"), expired[0]);

        JsonNode again = ok("expose_port", Map.of("workspace", ws, "port", 3000, "access", "link"));
        assertEquals("200", curl(again.path("url").asString() + "chunked")[1]);
        JsonNode closed = ok("expose_port", Map.of("workspace", ws, "port", 3000, "close", true));
        assertTrue(closed.path("closed").asBoolean());
        assertEquals("404", curl(again.path("url").asString() + "chunked")[1]);
        assertTrue(error("expose_port", Map.of("workspace", ws, "port", 3000, "close", true)).contains("not exposed"));
        assertTrue(error("expose_port", Map.of("workspace", "nope", "port", 3000)).contains("no workspace"));
    }

    @Test
    @Order(6)
    void parkedWorkspace_wokenByARequest_andExposureSurvivesRestartOnTheSameUrl() throws Exception {
        JsonNode e = ok("expose_port", Map.of("workspace", ws, "port", 8000, "access", "link"));
        String url = e.path("url").asString();
        ok("park", Map.of("workspace", ws));
        // namespace park stops processes: the request wakes the workspace, and finds nothing listening yet
        String[] woke = curl(url + "hello.txt");
        assertEquals("502", woke[1], woke[0]);
        JsonNode info = null;
        for (JsonNode w : ok("list_workspaces", Map.of()).path("workspaces")) if (w.path("workspace").asString().equals(ws)) info = w;
        assertEquals("running", info.path("state").asString(), "the request resumed the parked workspace");

        mcp.close();
        mcp = server();
        JsonNode listed = null;
        for (JsonNode w : ok("list_workspaces", Map.of()).path("workspaces")) if (w.path("workspace").asString().equals(ws)) listed = w;
        boolean found = false;
        for (JsonNode p : listed.path("exposed_ports")) if (p.path("url").asString().equals(url)) found = true;
        assertTrue(found, "same URL after a restart: " + listed);
        startServers();
        String[] page = curl(url + "hello.txt");
        assertEquals("200", page[1], page[0]);
        assertEquals("hello from python\n", page[0]);
    }
}
