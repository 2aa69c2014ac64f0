package dev.berth.mcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * expose_port over `berth http` on the MCP server's own port (no BERTH_PREVIEW_PORT), with the operator's wildcard
 * domain {@code previews.test}: the same listener serves /mcp, {@code <public_url>/p/<id>/} and
 * {@code <id>.previews.test}; curl (--resolve) and Chromium (--host-resolver-rules) reach the host names on
 * 127.0.0.1. A python app in alice's workspace redirects (relative and absolute), sets a cookie with Path and Domain
 * and echoes the head it saw: Location, Set-Cookie, Host, Origin and X-Forwarded-* are checked in both forms; the
 * preview cookie is host-only / path-scoped, HttpOnly, SameSite=Lax, and useless on bob's preview.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class PreviewRoutingE2eTest {
    private static final JsonMapper JSON = JsonMapper.builder().build();
    private Path dir;
    private BerthHttp server;
    private McpBridge alice;
    private McpBridge bob;
    private String aliceId;
    private String bobId;
    private String hostUrl;
    private String pathUrl;

    @BeforeAll
    void start() throws Exception {
        dir = Files.createTempDirectory("berth-preview-routing-");
        server = BerthHttp.start(dir, """
                {"auth": {"tokens": [{"tenant": "alice", "sha256": "%s"}, {"tenant": "bob", "sha256": "%s"}]},
                 "tenants": {"alice": {}, "bob": {}},
                 "http": {"previews": {"domain": "previews.test"}}}
                """.formatted(BearerAuthenticatorTest.sha256("alice-token"), BearerAuthenticatorTest.sha256("bob-token")));
        alice = McpBridge.http(server.url("/mcp"), "alice-token");
        alice.connect();
        bob = McpBridge.http(server.url("/mcp"), "bob-token");
        bob.connect();
        String app = new String(PreviewRoutingE2eTest.class.getResourceAsStream("/preview/redirect_app.py").readAllBytes(), StandardCharsets.UTF_8);
        String wa = ok(alice, "open_workspace", Map.of("name", "app")).path("workspace").asString();
        ok(alice, "write_file", Map.of("workspace", wa, "path", "/workspace/app.py", "content", app));
        serve(alice, wa, "exec python3 /workspace/app.py 8000", 8000);
        String wb = ok(bob, "open_workspace", Map.of("name", "site")).path("workspace").asString();
        ok(bob, "write_file", Map.of("workspace", wb, "path", "/workspace/site/index.html", "content", "bob's page\n"));
        serve(bob, wb, "cd /workspace/site && exec python3 -m http.server 8001 --bind 127.0.0.1", 8001);
        JsonNode ea = ok(alice, "expose_port", Map.of("workspace", wa, "port", 8000));
        hostUrl = ea.path("url").asString();
        aliceId = java.net.URI.create(hostUrl).getHost().split("\\.")[0];
        pathUrl = server.url("/p/" + aliceId + "/");
        bobId = java.net.URI.create(ok(bob, "expose_port", Map.of("workspace", wb, "port", 8001)).path("url").asString()).getHost().split("\\.")[0];
    }

    private static void serve(McpBridge b, String ws, String command, int port) throws Exception {
        ok(b, "run", Map.of("workspace", ws, "background", true, "timeout_s", 3600, "command", command));
        ok(b, "run", Map.of("workspace", ws, "timeout_s", 60, "command", "python3 -c 'import socket, time\nwhile True:\n"
                + "    try:\n        socket.create_connection((\"127.0.0.1\", " + port + ")).close(); break\n    except OSError:\n        time.sleep(0.05)'"));
    }

    @AfterAll
    void stop() throws Exception {
        if (alice != null) alice.close();
        if (bob != null) bob.close();
        if (server != null) server.close();
        HomeLeaks.assertNone(dir); // a leak is named here, before the delete
        dev.berth.engine.spi.Trees.delete(dir);
    }

    private static JsonNode ok(McpBridge b, String tool, Map<String, Object> args) throws Exception {
        return SchemaCheck.ok(b, tool, args);
    }

    private static String[] curl(String... args) throws Exception {
        return Curl.call(args);
    }

    private String host(String id) { return id + ".previews.test:" + server.port; }

    private String[] resolve(String id) { return new String[] {"--resolve", host(id) + ":127.0.0.1"}; }

    private String[] viaHost(String id, String path, String... more) throws Exception {
        List<String> a = new ArrayList<>(List.of(resolve(id)));
        a.addAll(List.of(more));
        a.add("http://" + host(id) + path);
        return curl(a.toArray(String[]::new));
    }

    @Test
    void samePort_mcpResourceMetadataAndPreviewsShareThePublicUrl() throws Exception {
        assertEquals("http://" + host(aliceId) + "/", hostUrl, "with a domain, expose_port returns the per-port host name");
        String[] page = curl("-H", "Authorization: Bearer alice-token", pathUrl);
        assertEquals("200", page[1], page[0]);
        assertEquals("root page\n", page[0]);
        assertEquals("200", curl(server.url("/.well-known/oauth-protected-resource"))[1]);
        String[] noToken = curl("-X", "POST", "-H", "Content-Type: application/json", "--data", "{}", server.url("/mcp"));
        assertEquals("401", noToken[1], "the MCP endpoint behind the same port still wants a token: " + noToken[0]);
        String[] notAPreview = curl("-H", "Authorization: Bearer alice-token", server.url("/nothing-here"));
        assertEquals("404", notAPreview[1], notAPreview[0]);
        // the tools still answer through the shared port (the bridges connected through it)
        assertTrue(ok(alice, "list_workspaces", Map.of()).toString().contains(aliceId));
    }

    @Test
    void pathForm_redirectsCookiesAndForwardedHeadersRewritten() throws Exception {
        String auth = "Authorization: Bearer alice-token";
        String[] login = curl("-D", "-", "-H", auth, pathUrl + "go-login");
        assertEquals("302", login[1], login[0]);
        assertTrue(login[0].contains("Location: /p/" + aliceId + "/login\r\n"), login[0]);
        assertTrue(login[0].contains("Set-Cookie: sid=s1; Path=/p/" + aliceId + "/; SameSite=Lax\r\n"), "Path under the prefix, no Domain: " + login[0]);
        String[] home = curl("-D", "-", "-H", auth, pathUrl + "go-home");
        assertTrue(home[0].contains("Location: " + server.url("/p/" + aliceId + "/home?x=1") + "\r\n"), home[0]);
        String[] away = curl("-D", "-", "-H", auth, pathUrl + "go-away");
        assertTrue(away[0].contains("Location: https://example.org/\r\n"), "a redirect out of the app is left alone: " + away[0]);
        String[] followed = curl("-L", "-H", auth, pathUrl + "go-login");
        assertEquals("login page\n", followed[0], followed[1]);
        // HEAD responses on a kept-alive connection: the next response still parses
        String[] heads = curl("-I", "-H", auth, pathUrl + "go-login", pathUrl + "login");
        assertTrue(heads[0].contains("HTTP/1.1 302") && heads[0].contains("HTTP/1.1 200") && heads[1].equals("200"), heads[0]);

        JsonNode echo = JSON.readTree(curl("-H", auth, "-H", "Origin: " + server.url(""), pathUrl + "echo")[0]);
        assertEquals("localhost:8000", echo.path("host").asString());
        assertEquals("http://localhost:8000", echo.path("origin").asString(), "Origin follows the Host the app sees");
        assertEquals("127.0.0.1:" + server.port, echo.path("x_forwarded_host").asString());
        assertEquals("http", echo.path("x_forwarded_proto").asString());
        assertEquals("/p/" + aliceId, echo.path("x_forwarded_prefix").asString());
        assertTrue(echo.path("authorization").isNull(), "the tenant's token never reaches the app: " + echo);

        String[] swap = curl("-D", "-", pathUrl + "?berth_token=alice-token");
        assertEquals("303", swap[1], swap[0]);
        String cookie = header(swap[0], "Set-Cookie");
        assertTrue(cookie.matches("berth_preview=[A-Za-z0-9_-]{43}; Path=/p/" + aliceId + "/; HttpOnly; SameSite=Lax"), cookie);
    }

    @Test
    void hostForm_appAtRoot_hostOnlyCookie_otherTenantsRefused() throws Exception {
        String auth = "Authorization: Bearer alice-token";
        String[] root = viaHost(aliceId, "/", "-H", auth);
        assertEquals("root page\n", root[0], root[1]);
        JsonNode echo = JSON.readTree(viaHost(aliceId, "/echo", "-H", auth, "-H", "Origin: http://" + host(aliceId))[0]);
        assertEquals("localhost:8000", echo.path("host").asString());
        assertEquals("http://localhost:8000", echo.path("origin").asString());
        assertEquals(host(aliceId), echo.path("x_forwarded_host").asString());
        assertTrue(echo.path("x_forwarded_prefix").isNull(), echo.toString());
        String[] login = viaHost(aliceId, "/go-login", "-D", "-", "-H", auth);
        assertTrue(login[0].contains("Location: /login\r\n"), login[0]);
        assertTrue(login[0].contains("Set-Cookie: sid=s1; Path=/; SameSite=Lax\r\n"), login[0]);
        String[] home = viaHost(aliceId, "/go-home", "-D", "-", "-H", auth);
        assertTrue(home[0].contains("Location: http://" + host(aliceId) + "/home?x=1\r\n"), home[0]);

        String[] swap = viaHost(aliceId, "/?berth_token=alice-token", "-D", "-");
        assertEquals("303", swap[1], swap[0]);
        String cookie = header(swap[0], "Set-Cookie");
        assertTrue(cookie.matches("berth_preview=[A-Za-z0-9_-]{43}; Path=/; HttpOnly; SameSite=Lax"), "host-only (no Domain): " + cookie);
        assertEquals("/", header(swap[0], "Location"));
        String value = cookie.substring(cookie.indexOf('=') + 1, cookie.indexOf(';'));
        assertEquals("root page\n", viaHost(aliceId, "/", "-b", "berth_preview=" + value)[0]);

        // alice's cookie on bob's preview host, bob's token on alice's, no token, an unknown id
        String[] replayed = viaHost(bobId, "/", "-b", "berth_preview=" + value);
        assertEquals("401", replayed[1], replayed[0]);
        String[] other = viaHost(aliceId, "/", "-H", "Authorization: Bearer bob-token");
        assertEquals("404", other[1], other[0]);
        assertEquals("401", viaHost(aliceId, "/")[1]);
        assertEquals("bob's page\n", viaHost(bobId, "/", "-H", "Authorization: Bearer bob-token")[0]);
        String unknown = "a".repeat(32);
        assertEquals("404", viaHost(unknown, "/", "-H", auth)[1]);
        assertEquals("404", viaHost("not-an-id", "/", "-H", auth)[1]);
    }

    @Test
    void chromium_followsRewrittenRedirectsInBothForms() throws Exception {
        try (HeadlessChromium browser = new HeadlessChromium(dir, hostUrl + "?berth_token=alice-token",
                "--host-resolver-rules=MAP *.previews.test 127.0.0.1")) {
            String r = browser.evaluate("new Promise(r => { const f = () => document.body && document.body.innerText.includes('root page')"
                    + " ? fetch('/go-login').then(x => x.text().then(t => r(x.url + ' ' + x.status + ' ' + t.trim() + ' ' + document.cookie)))"
                    + " : setTimeout(f, 50); f(); })", Duration.ofSeconds(60));
            assertEquals("http://" + host(aliceId) + "/login 200 login page sid=s1", r, "the app's cookie (its Domain dropped) is stored; the HttpOnly preview cookie is not visible to scripts");
        }
        try (HeadlessChromium browser = new HeadlessChromium(dir, pathUrl + "?berth_token=alice-token")) {
            String r = browser.evaluate("new Promise(r => { const f = () => document.body && document.body.innerText.includes('root page')"
                    + " ? fetch('go-home').then(x => x.text().then(t => r(x.url + ' ' + x.status + ' ' + t.trim())))"
                    + " : setTimeout(f, 50); f(); })", Duration.ofSeconds(60));
            assertEquals(server.url("/p/" + aliceId + "/home?x=1") + " 200 home page", r);
        }
    }

    @Test
    void closedWorkspace_404_andAnAppThatNeverReads_stallsTheUploadInsteadOfBufferingIt() throws Exception {
        String ws = ok(alice, "open_workspace", Map.of("name", "sink")).path("workspace").asString();
        // accepts connections and never reads from them
        ok(alice, "write_file", Map.of("workspace", ws, "path", "/workspace/sink.py", "content",
                "import socket, time\ns = socket.socket()\ns.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
                        + "s.bind(('127.0.0.1', 8009))\ns.listen(16)\nheld = []\nwhile True:\n    held.append(s.accept()[0])\n"));
        serve(alice, ws, "exec python3 /workspace/sink.py", 8009);
        String url = ok(alice, "expose_port", Map.of("workspace", ws, "port", 8009, "access", "link")).path("url").asString();
        String id = java.net.URI.create(url).getHost().split("\\.")[0];

        // a 1 GiB upload to it: the client's writes stall once the bounded buffers on the way are full
        long sent = 0;
        try (java.nio.channels.SocketChannel c = java.nio.channels.SocketChannel.open(new java.net.InetSocketAddress("127.0.0.1", server.port));
             java.nio.channels.Selector sel = java.nio.channels.Selector.open()) {
            c.write(java.nio.ByteBuffer.wrap(("POST /p/" + id + "/upload HTTP/1.1\r\nHost: x\r\nContent-Length: 1073741824\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII)));
            c.configureBlocking(false);
            c.register(sel, java.nio.channels.SelectionKey.OP_WRITE);
            java.nio.ByteBuffer chunk = java.nio.ByteBuffer.allocate(1 << 16);
            while (sent < (1L << 30)) {
                chunk.clear();
                int n = c.write(chunk);
                sent += n;
                if (n == 0) {
                    sel.selectedKeys().clear();
                    if (sel.select(5_000) == 0) break; // not writable for 5 s: back-pressure reached the client
                }
            }
        }
        assertTrue(sent < 64L << 20, "the upload stalled after " + sent + " bytes, not buffered by the server (of 1 GiB)");
        assertEquals("root page\n", curl("-H", "Authorization: Bearer alice-token", pathUrl)[0], "the server serves on");

        ok(alice, "close_workspace", Map.of("workspace", ws, "delete", true));
        String[] gone = curl(server.url("/p/" + id + "/"));
        assertEquals("404", gone[1], gone[0]);
        assertEquals("no such preview (never exposed, unexposed, or its workspace closed)\n", gone[0]);
        assertEquals("404", viaHost(id, "/")[1]);
    }

    private static String header(String heads, String name) {
        for (String line : heads.split("\r\n")) {
            if (line.regionMatches(true, 0, name + ":", 0, name.length() + 1)) return line.substring(name.length() + 1).strip();
        }
        throw new AssertionError("no " + name + " in " + heads);
    }
}
