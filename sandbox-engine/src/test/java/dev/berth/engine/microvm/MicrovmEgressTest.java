package dev.berth.engine.microvm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import dev.berth.engine.EgressFixture;
import dev.berth.engine.EgressSettings;
import dev.berth.engine.Engine;
import dev.berth.engine.EngineConfig;
import dev.berth.engine.EngineException;
import dev.berth.engine.OpenRequest;
import dev.berth.engine.OutputListener;
import dev.berth.engine.RunRequest;
import dev.berth.engine.RunResult;
import dev.berth.engine.Tenant;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * The egress path on the microVM driver, through the engine: the guest has no network device, so busybox wget in
 * the guest reaches an upstream on the host's loopback only through the agent's proxy port and the egress proxy,
 * and only where the policy says so.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class MicrovmEgressTest {
    Path home;
    HttpServer upstream;
    int port;
    Engine engine;
    String ws;

    @BeforeAll
    void start() throws Exception {
        upstream = EgressFixture.upstream(path -> "hello from the host");
        upstream.createContext("/big", ex -> {
            ex.sendResponseHeaders(200, BIG);
            byte[] block = new byte[64 * 1024];
            try (var out = ex.getResponseBody()) {
                for (long left = BIG; left > 0; left -= block.length) out.write(block, 0, (int) Math.min(block.length, left));
            }
        });
        port = upstream.getAddress().getPort();
        home = Files.createTempDirectory("berth-vm-egress-");
        EgressSettings egress = EgressFixture.proxy(List.of("allowed.test:" + port));
        engine = Engine.start(EngineConfig.defaults(home, List.of(new MicrovmDriver(TestImages.builder(), MicrovmDriver.ImageKind.TEST)))
                .withEgress(egress));
        ws = engine.open(Tenant.LOCAL, OpenRequest.ephemeral()).workspace().id();
    }

    @AfterAll
    void stop() throws Exception {
        if (engine != null) engine.close();
        if (upstream != null) upstream.stop(0);
        if (home != null) dev.berth.engine.spi.Trees.delete(home);
    }

    RunResult sh(String cmd) throws EngineException {
        return engine.run(Tenant.LOCAL, RunRequest.of(ws, cmd), OutputListener.NONE);
    }

    static final long BIG = 24L << 20;

    /**
     * A reader in the guest that stalls (here a pipe whose reader sleeps 3 s first) while the upstream sends 24 MiB:
     * the tunnel is flow controlled over the virtio-serial channel too, so the host holds back instead of the agent
     * resetting the tunnel once 8 MiB piled up for a client that does not read (what the code before did).
     */
    @Test
    void stallingReaderInTheGuest_bigDownload_everyByteArrives() throws Exception {
        RunResult r = engine.run(Tenant.LOCAL, new RunRequest(ws, "wget -q -O - http://allowed.test:" + port + "/big | (sleep 3; wc -c)",
                null, null, 180, null, null), OutputListener.NONE);
        assertEquals(0, r.exitCode(), r.toString());
        assertEquals(Long.toString(BIG), r.stdout().trim(), r.toString());
    }

    @Test
    void allowedHost_reachedThroughTheAgentTunnel() throws Exception {
        RunResult r = sh("wget -q -O - http://allowed.test:" + port + "/");
        assertEquals("hello from the host", r.stdout(), r.toString());
    }

    @Test
    void deniedHost_failsWithReasonInTheRunResult() throws Exception {
        RunResult r = sh("wget -q -O - http://denied.test:" + port + "/");
        assertNotEquals(0, r.exitCode());
        assertEquals("denied.test", r.egressDenied().get(0).host(), r.toString());
        assertTrue(r.egressDenied().get(0).reason().contains("matches no allowlist entry"), r.toString());
    }

    @Test
    void withoutTheProxy_thereIsNoRouteAndNoDns() throws Exception {
        RunResult direct = sh("wget -q -T 5 -Y off -O - http://192.0.2.1:" + port + "/; echo rc=$?");
        assertTrue(direct.stdout().contains("rc=1"), direct.toString());
        RunResult ifaces = sh("ls /sys/class/net");
        assertEquals("lo\n", ifaces.stdout());
        RunResult dns = sh("nslookup allowed.test 2>&1; echo rc=$?");
        assertNotEquals("rc=0", dns.stdout().strip().substring(dns.stdout().strip().lastIndexOf('\n') + 1), dns.toString());
    }
}
