package dev.berth.mcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.berth.fleet.EtcdCluster;
import dev.berth.fleet.EtcdStore;
import dev.berth.fleet.FleetKeys;
import dev.berth.fleet.NodeOffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Berth nodes as separate {@code java -jar berth.jar node} processes on distinct loopback addresses (127.0.0.2,
 * 127.0.0.3), each with its own home, joined to a real 3-member etcd: registration with the offer, a live node id
 * refused, an unreachable etcd refused by name, a node killed with SIGKILL dropping out when its lease expires. One
 * etcd and one pair of nodes for every case.
 */
@ExtendWith(EtcdCluster.Shared.class)
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class FleetE2eTest {
    static final String TOKEN = "fleet-e2e-token-of-tenant-a";
    @TempDir
    static Path dir;
    private EtcdCluster etcd;
    private EtcdStore store;
    private FleetKeys keys;
    private BerthHttp n1;
    private BerthHttp n2;

    String config(String nodeId, String endpoints, int ttl) {
        return "{\"auth\": {\"tokens\": [{\"tenant\": \"a\", \"sha256\": \"" + sha256(TOKEN) + "\"}]},"
                + " \"tenants\": {\"a\": {\"quota\": {\"workspaces\": 2}}},"
                + " \"pool\": {\"size\": 0}, \"http\": {\"allowed_hosts\": [\"127.0.0.2:*\", \"127.0.0.3:*\", \"127.0.0.4:*\"]},"
                + " \"fleet\": {\"endpoints\": [" + endpoints + "], \"node_id\": \"" + nodeId + "\", \"labels\": {\"zone\": \"z-" + nodeId + "\"},"
                + " \"internal_credential_file\": \"" + dir.resolve("node.secret") + "\", \"lease_ttl_s\": " + ttl
                + ", \"prefix\": \"" + keys.prefix() + "\"}}";
    }

    String endpoints() {
        return String.join(", ", etcd.endpoints().stream().map(u -> "\"" + u + "\"").toList());
    }

    @BeforeAll
    void start(EtcdCluster etcd) throws Exception {
        this.etcd = etcd;
        this.store = etcd.store();
        this.keys = new FleetKeys(EtcdCluster.prefix("e2e"));
        Files.setPosixFilePermissions(dir, java.nio.file.attribute.PosixFilePermissions.fromString("rwx--x--x"));
        Files.writeString(dir.resolve("node.secret"), "0123456789abcdef0123456789abcdef0123456789abcdef\n");
        var a = CompletableFuture.supplyAsync(() -> node("n1", "127.0.0.2", 30));
        var b = CompletableFuture.supplyAsync(() -> node("n2", "127.0.0.3", 3));
        n1 = a.get(180, TimeUnit.SECONDS);
        n2 = b.get(180, TimeUnit.SECONDS);
    }

    private BerthHttp node(String id, String bind, int ttl) {
        try {
            Path d = Files.createDirectories(dir.resolve(id));
            return BerthHttp.start(d, config(id, endpoints(), ttl), Map.of(), "node", bind, BerthHttp.freePort());
        } catch (Exception e) {
            throw new IllegalStateException("node " + id + " did not start: " + e.getMessage(), e);
        }
    }

    @AfterAll
    void stop() throws Exception {
        if (n1 != null) {
            n1.close();
            assertTrue(store.get(keys.node("n1")).isEmpty(), "a node stopped by SIGTERM leaves at once (its lease revoked)");
        }
        if (n2 != null) n2.close();
        if (store != null) store.close();
    }

    @Test
    @Order(1)
    void nodes_registeredWithTheirOffers() {
        for (var n : List.of(n1, n2)) {
            String id = n == n1 ? "n1" : "n2";
            var offer = NodeOffer.parse(store.get(keys.node(id)).orElseThrow(() -> new AssertionError(id + " not registered:\n" + n.log())).value());
            assertEquals("http://" + n.host + ":" + n.port, offer.address(), "advertised at its public URL");
            assertEquals(Map.of("zone", "z-" + id), offer.labels());
            assertTrue(offer.levels().contains("namespace"), offer.levels().toString());
            assertTrue(offer.freeMemoryMiB() > 0 && offer.freeVcpus() > 0, offer.toString());
            assertNotEquals("", offer.qemuVersion());
            assertTrue(n.log().contains("joined the fleet as node '" + id + "'"), n.log());
        }
    }

    @Test
    @Order(2)
    void sameNodeIdAsALiveNode_refused_theLiveOneUntouched() throws Exception {
        long before = store.get(keys.node("n1")).orElseThrow().lease();
        var r = run("dup", config("n1", endpoints(), 30), "127.0.0.4");
        assertEquals(1, r.code, r.out);
        assertTrue(r.out.contains("cannot join the fleet as node 'n1': node id 'n1' is already live in the fleet (registered by http://127.0.0.2:"
                + n1.port), r.out);
        assertTrue(!r.out.contains("berth http listening on"), r.out);
        assertEquals(before, store.get(keys.node("n1")).orElseThrow().lease());
    }

    @Test
    @Order(3)
    void fleetStatusAndCordon_fromTheCommandLine() throws Exception {
        Path cfg = Files.createDirectories(dir.resolve("status")).resolve("berth.json");
        Files.writeString(cfg, config("n-status", endpoints(), 30));
        assertTrue(berth("node", "cordon", "n1", "--config", cfg.toString()).contains("node n1 cordoned"));
        String out = berth("fleet", "status", "--config", cfg.toString());
        assertTrue(out.contains("2 live node(s)"), out);
        assertTrue(out.matches("(?s).*\\nn1 +http://127\\.0\\.0\\.2:" + n1.port + " .* yes +\\d+\\n.*"), out);
        assertTrue(out.matches("(?s).*\\nn2 +http://127\\.0\\.0\\.3:" + n2.port + " .* no +\\d+\\n.*"), out);
        assertTrue(berth("node", "uncordon", "n1", "--config", cfg.toString()).contains("node n1 uncordoned"));
        assertTrue(store.get(keys.cordon("n1")).isEmpty());
    }

    /** Runs {@code berth ARGS...} to its end; returns its output, having checked it exited 0. */
    private static String berth(String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(McpBridge.javaBin(), "-jar", McpBridge.JAR.toString()));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(120, TimeUnit.SECONDS));
        assertEquals(0, p.exitValue(), out);
        return out;
    }

    @Test
    @Order(3)
    void etcdUnreachable_refusedNamingTheEndpoint_nothingRegistered() throws Exception {
        var r = run("dead", config("n9", "\"http://127.0.0.1:9\"", 30), "127.0.0.4");
        assertEquals(1, r.code, r.out);
        assertTrue(r.out.contains("cannot join the fleet as node 'n9': etcd at http://127.0.0.1:9 cannot be reached"), r.out);
        assertTrue(store.get(keys.node("n9")).isEmpty());
    }

    @Test
    @Order(4)
    void namesAndQuotas_holdAcrossNodes() throws Exception {
        try (var c1 = new Mcp(n1); var c2 = new Mcp(n2)) {
            String proj = id(c1.call("open_workspace", "{\"name\": \"proj\"}"));
            String taken = c2.call("open_workspace", "{\"name\": \"proj\"}");
            assertTrue(taken.contains("\"isError\":true") && taken.contains("workspace name 'proj' is taken in tenant 'a' across the fleet (by "
                    + proj + " on node n1)"), taken);
            String other = id(c2.call("open_workspace", "{}"));
            // n1 holds one of the tenant's 2 workspaces, n2 the other: n1's own count (1) would allow a second
            String over = c1.call("open_workspace", "{}");
            assertTrue(over.contains("\"isError\":true") && over.contains("quota of tenant 'a' across the fleet: workspaces: 2 of 2 in use, 1 more asked"), over);
            assertTrue(c2.call("close_workspace", "{\"workspace\": \"" + other + "\", \"delete\": true}").contains("\"isError\":false"));
            String again = id(c1.call("open_workspace", "{}"));
            for (String ws : List.of(proj, again)) {
                assertTrue(c1.call("close_workspace", "{\"workspace\": \"" + ws + "\", \"delete\": true}").contains("\"isError\":false"));
            }
        }
        assertEquals(List.of(), store.range(keys.workspaces()), "every closed workspace released its record");
        assertEquals(0, new dev.berth.fleet.TenantLedger(store, keys, java.time.Clock.systemUTC()).usage("a").workspaces());
    }

    private static String id(String result) {
        var m = java.util.regex.Pattern.compile("\"workspace\":\"(ws-[0-9a-f]+)\"").matcher(result);
        assertTrue(m.find() && !result.contains("\"isError\":true"), result);
        return m.group(1);
    }

    static String sha256(String s) {
        try {
            return java.util.HexFormat.of().formatHex(java.security.MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8)));
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** A minimal Streamable HTTP client session for tenant a on one node: initialize, then tools/call; each result's JSON. */
    static final class Mcp implements AutoCloseable {
        private final java.net.http.HttpClient http = java.net.http.HttpClient.newHttpClient();
        private final BerthHttp node;
        private final String session;
        private int next = 2;

        Mcp(BerthHttp node) throws Exception {
            this.node = node;
            var init = post(null, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\","
                    + "\"capabilities\":{},\"clientInfo\":{\"name\":\"fleet-e2e\",\"version\":\"1\"}}}");
            this.session = init.headers().firstValue("Mcp-Session-Id").orElseThrow(() -> new AssertionError(init.body()));
            post(session, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
        }

        String call(String tool, String args) throws Exception {
            var r = post(session, "{\"jsonrpc\":\"2.0\",\"id\":" + next++ + ",\"method\":\"tools/call\",\"params\":{\"name\":\"" + tool
                    + "\",\"arguments\":" + args + "}}");
            String body = r.body();
            // an SSE answer: the last data line is the JSON-RPC response
            String json = body.lines().filter(l -> l.startsWith("data:")).reduce((a, b) -> b).map(l -> l.substring(5).strip()).orElse(body);
            return json.replace("\": ", "\":");
        }

        private java.net.http.HttpResponse<String> post(String session, String body) throws Exception {
            var b = java.net.http.HttpRequest.newBuilder(java.net.URI.create(node.url("/mcp"))).timeout(java.time.Duration.ofSeconds(120))
                    .header("Authorization", "Bearer " + TOKEN).header("Content-Type", "application/json")
                    .header("Accept", "application/json, text/event-stream").POST(java.net.http.HttpRequest.BodyPublishers.ofString(body));
            if (session != null) b.header("Mcp-Session-Id", session);
            return http.send(b.build(), java.net.http.HttpResponse.BodyHandlers.ofString());
        }

        @Override
        public void close() {
            http.close();
        }
    }

    @Test
    @Order(5)
    void kill9_registrationExpires_itsWorkspacesMarkedByTheOthers_othersUndisturbed() throws Exception {
        String doomed;
        String scratch;
        try (var c2 = new Mcp(n2)) {
            doomed = id(c2.call("open_workspace", "{\"name\": \"doomed\"}"));
            scratch = id(c2.call("open_workspace", "{\"lifecycle\": \"ephemeral\"}"));
        }
        var own = new dev.berth.fleet.Ownership(store, keys, java.time.Clock.systemUTC());
        n2.process.destroyForcibly(); // SIGKILL: no leave, the lease runs out
        long killed = System.nanoTime();
        long deadline = killed + TimeUnit.SECONDS.toNanos(30);
        long goneMs = -1;
        while (System.nanoTime() < deadline) {
            if (goneMs < 0 && store.get(keys.node("n2")).isEmpty()) goneMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killed);
            if ("recovered".equals(own.get(doomed).orElseThrow().state())) break;
            Thread.sleep(50);
        }
        long markedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killed);
        var rec = own.get(doomed).orElseThrow();
        assertEquals("recovered", rec.state(), "n1 marks n2's workspace when n2's 3 s lease expires");
        assertTrue(rec.recovered().startsWith("node lost at "), rec.recovered());
        assertEquals("n2", rec.owner(), "still n2's: it comes back when n2 returns");
        System.out.println("[fleet] kill -9 to registration gone: " + goneMs + " ms, to workspace marked recovered: " + markedMs
                + " ms (lease ttl 3 s)");
        assertTrue(store.get(keys.node("n1")).isPresent(), "n1 undisturbed");
        // n2 comes back on the same home: its engine recovers the workspace (parked) and the fleet serves it again
        n2 = node("n2", "127.0.0.3", 3);
        assertEquals("parked", own.get(doomed).orElseThrow().state());
        assertTrue(own.get(scratch).isEmpty(), "the ephemeral workspace died with the process: released on return");
        assertEquals(1, new dev.berth.fleet.TenantLedger(store, keys, java.time.Clock.systemUTC()).usage("a").workspaces());
        try (var c2 = new Mcp(n2)) {
            String ran = c2.call("run", "{\"workspace\": \"doomed\", \"command\": \"true\"}");
            assertTrue(ran.contains("\"isError\":false"), ran);
            assertTrue(c2.call("close_workspace", "{\"workspace\": \"doomed\", \"delete\": true}").contains("\"isError\":false"));
        }
        assertTrue(own.get(doomed).isEmpty(), "closed: released from the fleet");
    }

    record Exit(int code, String out) {}

    private Exit run(String name, String configJson, String bind) throws Exception {
        Path d = Files.createDirectories(dir.resolve(name));
        Path cfg = d.resolve("berth.json");
        Files.writeString(cfg, configJson);
        List<String> cmd = new ArrayList<>(List.of(McpBridge.javaBin(), "-jar", McpBridge.JAR.toString(), "node", "--config", cfg.toString(),
                "--home", Files.createDirectories(d.resolve("home")).toString(), "--bind", bind, "--port",
                String.valueOf(BerthHttp.freePort()), "--isolation", "namespace"));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        p.getOutputStream().close();
        var out = CompletableFuture.supplyAsync(() -> {
            try {
                return new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            } catch (java.io.IOException e) {
                return e.toString();
            }
        });
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("berth node " + name + " did not exit in 120 s:\n" + out.getNow(""));
        }
        return new Exit(p.exitValue(), out.get(30, TimeUnit.SECONDS));
    }
}
