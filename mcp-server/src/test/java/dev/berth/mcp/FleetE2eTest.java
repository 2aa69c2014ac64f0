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
    static final String TOKEN_SHA = "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881";
    @TempDir
    static Path dir;
    private EtcdCluster etcd;
    private EtcdStore store;
    private FleetKeys keys;
    private BerthHttp n1;
    private BerthHttp n2;

    String config(String nodeId, String endpoints, int ttl) {
        return "{\"auth\": {\"tokens\": [{\"tenant\": \"a\", \"sha256\": \"" + TOKEN_SHA + "\"}]}, \"tenants\": {\"a\": {}},"
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
        if (n2 != null) n2.process.destroyForcibly();
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
    void etcdUnreachable_refusedNamingTheEndpoint_nothingRegistered() throws Exception {
        var r = run("dead", config("n9", "\"http://127.0.0.1:9\"", 30), "127.0.0.4");
        assertEquals(1, r.code, r.out);
        assertTrue(r.out.contains("cannot join the fleet as node 'n9': etcd at http://127.0.0.1:9 cannot be reached"), r.out);
        assertTrue(store.get(keys.node("n9")).isEmpty());
    }

    @Test
    @Order(4)
    void kill9_registrationExpiresWithTheLease_othersUndisturbed() throws Exception {
        n2.process.destroyForcibly(); // SIGKILL: no leave, the lease runs out
        long killed = System.nanoTime();
        long deadline = killed + TimeUnit.SECONDS.toNanos(30);
        while (store.get(keys.node("n2")).isPresent() && System.nanoTime() < deadline) Thread.sleep(50);
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killed);
        assertTrue(store.get(keys.node("n2")).isEmpty(), "n2's registration must expire with its 3 s lease");
        System.out.println("[fleet] kill -9 to registration gone: " + ms + " ms (lease ttl 3 s)");
        assertTrue(store.get(keys.node("n1")).isPresent(), "n1 undisturbed");
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
