package dev.berth.engine.contract;

import dev.berth.engine.EgressFixture;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import dev.berth.engine.api.EgressDenial;
import dev.berth.engine.api.EgressSettings;
import dev.berth.engine.Engine;
import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.OpenRequest;
import dev.berth.engine.api.OutputListener;
import dev.berth.engine.api.ProcessStatus;
import dev.berth.engine.api.RunRequest;
import dev.berth.engine.api.RunResult;
import dev.berth.engine.api.Tenant;
import dev.berth.engine.spi.Trees;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * The egress contract, from inside a real workspace of every level: the only way out is the agent's proxy port,
 * through the egress proxy, to what the policy names, and a denial comes back in the run's result with its reason.
 * The upstream is a real HTTP server on this machine's loopback; a test resolver maps {@code *.test} names to it,
 * allowed only with the proxy's unsafe loopback setting. Cases that need curl or python3 are skipped, saying so, on
 * the microVM test image (busybox only); busybox wget cases run everywhere. One engine and one workspace per class.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
public abstract class AbstractEgressContractTest {
    /** Bytes of the big download: well past the 8 MiB a tunnel once buffered for a client that did not read. */
    static final long BIG = 32L << 20;

    private Path home;
    private HttpServer upstream;
    private int port;
    private Engine engine;
    private String ws;

    /** The level under test. */
    protected abstract Level level();

    @BeforeAll
    void start() throws Exception {
        upstream = EgressFixture.upstream(path -> "hello from upstream " + path);
        upstream.createContext("/big", ex -> { // BIG bytes of a repeating pattern, streamed
            ex.sendResponseHeaders(200, BIG);
            byte[] block = new byte[64 * 1024];
            for (int i = 0; i < block.length; i++) block[i] = (byte) i;
            try (var out = ex.getResponseBody()) {
                for (long left = BIG; left > 0; left -= block.length) out.write(block, 0, (int) Math.min(block.length, left));
            }
        });
        port = upstream.getAddress().getPort();
        home = Files.createTempDirectory("berth-egress-contract-");
        EgressSettings egress = EgressFixture.proxy(List.of("allowed.test:" + port, "also.test:" + port));
        engine = level().start(home, c -> c.withEgress(egress));
        ws = engine.open(Tenant.LOCAL, OpenRequest.ephemeral()).workspace().id();
    }

    @AfterAll
    void stop() throws Exception {
        if (engine != null) engine.close();
        if (upstream != null) upstream.stop(0);
        if (home != null) Trees.delete(home);
    }

    private RunResult sh(String cmd) throws EngineException {
        return engine.run(Tenant.LOCAL, RunRequest.of(ws, cmd), OutputListener.NONE);
    }

    private RunResult run(RunRequest r) throws EngineException {
        return engine.run(Tenant.LOCAL, r, OutputListener.NONE);
    }

    /** Collects a background process's output until it ended (or 10 polls of 30 s each). */
    private ProcessStatus waitFor(ProcessStatus p) throws EngineException {
        ProcessStatus s = engine.process(Tenant.LOCAL, ws, p.process(), 0L, 0L, 30, null, 65536);
        StringBuilder out = new StringBuilder(s.stdout());
        for (int i = 0; i < 10 && s.running(); i++) {
            s = engine.process(Tenant.LOCAL, ws, p.process(), null, null, 30, null, 65536);
            out.append(s.stdout());
        }
        return new ProcessStatus(s.process(), s.workspace(), s.pid(), s.command(), s.running(), s.exitCode(), s.signal(), s.timedOut(),
                out.toString(), s.stderr(), s.stdoutFrom(), s.stdoutNext(), s.stderrFrom(), s.stderrNext(), s.stdoutDropped(),
                s.stderrDropped(), s.durationMs(), s.note());
    }

    // ---------------------------------------------------------------- flow control

    /**
     * Reported: the host pushed an upstream's bytes at the workspace as fast as it read them, and the agent reset a
     * tunnel whose client fell 8 MiB behind ("tunnel client is not reading"), so a download read slower than the
     * upstream sends (a throttled disk, a busy guest, here curl's --limit-rate) failed. With flow control end to end
     * the proxy reads the upstream only as fast as the client inside takes it: both the CONNECT tunnel and a plain
     * forwarded request deliver every byte.
     */
    @Test
    void slowReaderInside_bigDownload_flowControlledEndToEnd_everyByteArrives() throws Exception {
        level().assumeHostUserland("curl's --limit-rate and --proxytunnel");
        for (String how : List.of("--proxytunnel ", "")) {
            RunResult r = run(new RunRequest(ws, "curl -sS --max-time 120 --limit-rate 8M " + how
                    + "-o /dev/null -w '%{size_download}' http://allowed.test:" + port + "/big", null, null, 150, null, null));
            assertEquals(0, r.exitCode(), how + r);
            assertEquals(Long.toString(BIG), r.stdout(), how + r);
        }
    }

    /**
     * A reader inside that stalls (a pipe whose reader sleeps 3 s first) while the upstream sends the big body: the
     * tunnel is flow controlled over every agent channel (a socket, virtio-serial), so the host holds back instead of
     * the agent resetting the tunnel once 8 MiB piled up for a client that does not read.
     */
    @Test
    void stallingReaderInside_bigDownload_everyByteArrives() throws Exception {
        RunResult r = run(new RunRequest(ws, "busybox wget -q -O - http://allowed.test:" + port + "/big | (sleep 3; wc -c)",
                null, null, 180, null, null));
        assertEquals(0, r.exitCode(), r.toString());
        assertEquals(Long.toString(BIG), r.stdout().trim(), r.toString());
    }

    // ---------------------------------------------------------------- allowed and denied

    @Test
    void allowedHost_plainHttpAndConnect_reachUpstream() throws Exception {
        level().assumeHostUserland("curl --proxytunnel (CONNECT)");
        RunResult r = sh("curl -sS --max-time 20 http://allowed.test:" + port + "/plain");
        assertEquals("hello from upstream /plain", r.stdout(), r.toString());
        RunResult t = sh("curl -sS --max-time 20 --proxytunnel http://allowed.test:" + port + "/tunnel");
        assertEquals("hello from upstream /tunnel", t.stdout(), t.toString());
        assertEquals(List.of(), t.egressDenied());
    }

    @Test
    void allowedHost_busyboxWget_reachedThroughTheAgentTunnel() throws Exception {
        RunResult r = sh("busybox wget -q -O - http://allowed.test:" + port + "/");
        assertEquals("hello from upstream /", r.stdout(), r.toString());
        assertEquals(List.of(), r.egressDenied());
    }

    @Test
    void deniedHost_failsAndRunResultSaysWhy() throws Exception {
        level().assumeHostUserland("curl -w '%{http_code}' and --proxytunnel (CONNECT)");
        RunResult r = sh("curl -sS --max-time 20 -o /dev/null -w '%{http_code}' http://denied.test:" + port + "/");
        assertEquals(1, r.egressDenied().size(), r.toString());
        EgressDenial d = r.egressDenied().get(0);
        assertEquals("denied.test", d.host());
        assertEquals(port, d.port());
        assertTrue(d.reason().contains("'denied.test' matches no allowlist entry"), d.reason());
        assertNotEquals("200", r.stdout());
        RunResult c = sh("curl -sS --max-time 20 --proxytunnel http://denied.test:" + port + "/");
        assertNotEquals(0, c.exitCode());
        assertEquals("denied.test", c.egressDenied().get(0).host());
    }

    @Test
    void deniedHost_busyboxWget_failsWithReasonInTheRunResult() throws Exception {
        RunResult r = sh("busybox wget -q -O - http://denied.test:" + port + "/");
        assertNotEquals(0, r.exitCode());
        assertEquals(1, r.egressDenied().size(), r.toString());
        assertEquals("denied.test", r.egressDenied().get(0).host(), r.toString());
        assertEquals(port, r.egressDenied().get(0).port(), r.toString());
        assertTrue(r.egressDenied().get(0).reason().contains("'denied.test' matches no allowlist entry"), r.toString());
    }

    @Test
    void hostlessDenials_bareGetAndHttp2Preface_reportedWithNullHost_resultKept() throws Exception {
        level().assumeHostUserland("curl --http2-prior-knowledge");
        // bytes that name no host: an origin-form GET straight to the proxy port, and HTTP/2 prior knowledge
        RunResult r = sh("curl -s --max-time 20 --noproxy '*' -o /dev/null -w '%{http_code}' http://127.0.0.1:3128/; echo;"
                + " curl -s --max-time 20 --noproxy '*' --http2-prior-knowledge http://127.0.0.1:3128/ >/dev/null; echo done; exit 3");
        assertEquals(3, r.exitCode(), r.toString());
        assertTrue(r.stdout().startsWith("400\n") && r.stdout().endsWith("done\n"), r.toString());
        assertEquals(2, r.egressDenied().size(), r.toString());
        for (EgressDenial d : r.egressDenied()) {
            assertEquals(null, d.host(), d.toString());
            assertEquals(0, d.port(), d.toString());
            assertTrue(d.reason() != null && !d.reason().isBlank(), d.toString());
        }
    }

    // ---------------------------------------------------------------- narrowing per run

    @Test
    void backgroundRunNarrowing_appliesToItsOwnConnections() throws Exception {
        level().assumeHostUserland("curl -w '%{http_code}'");
        ProcessStatus bg = engine.startBackground(Tenant.LOCAL, new RunRequest(ws, "curl -sS --max-time 20 -o /dev/null -w '%{http_code}'"
                + " http://allowed.test:" + port + "/bg", null, Map.of(), null, null, null, List.of("also.test:" + port), null));
        ProcessStatus done = waitFor(bg);
        assertEquals("403", done.stdout(), done.toString());
        // the narrowing was the background run's own: a foreground run meanwhile and afterwards is not narrowed by it
        assertEquals("hello from upstream /fg", sh("curl -sS --max-time 20 http://allowed.test:" + port + "/fg").stdout());
    }

    @Test
    void denialOfABackgroundRun_isNotReportedToAConcurrentForegroundRun() throws Exception {
        level().assumeHostUserland("curl -w '%{http_code}'");
        sh("rm -f /workspace/bg-denied");
        ProcessStatus bg = engine.startBackground(Tenant.LOCAL, new RunRequest(ws, "curl -s --max-time 20 -o /dev/null -w '%{http_code}'"
                + " http://denied.test:" + port + "/ > /workspace/bg-denied.tmp; mv /workspace/bg-denied.tmp /workspace/bg-denied",
                null, Map.of(), null, null, null));
        // the foreground run is active while the background run is denied: it waits for that to have happened
        RunResult fg = sh("while [ ! -s /workspace/bg-denied ]; do sleep 0.05; done; cat /workspace/bg-denied");
        assertEquals("403", fg.stdout(), fg.toString());
        assertEquals(List.of(), fg.egressDenied(), "another run's denial was attributed to this run");
        waitFor(bg);
    }

    @Test
    void runNarrowing_cannotWidenAndNarrowsWhileActive() throws Exception {
        level().assumeHostUserland("curl");
        RunResult narrowed = run(new RunRequest(ws, "curl -sS --max-time 20 http://allowed.test:" + port + "/",
                null, Map.of(), null, null, null, List.of("also.test:" + port)));
        assertNotEquals("hello from upstream /", narrowed.stdout());
        assertEquals("allowed.test", narrowed.egressDenied().get(0).host(), narrowed.toString());
        RunResult widen = run(new RunRequest(ws, "curl -sS --max-time 20 http://elsewhere.test:" + port + "/",
                null, Map.of(), null, null, null, List.of("elsewhere.test:" + port)));
        assertEquals("elsewhere.test", widen.egressDenied().get(0).host(), "a run must not widen the policy: " + widen);
    }

    // ---------------------------------------------------------------- no other way out

    @Test
    void bypassAttempts_findNoRoute() throws Exception {
        level().assumeHostUserland("curl and python3 sockets");
        // no proxy: direct TCP to the host's loopback service, DNS, UDP, raw sockets
        RunResult direct = sh("curl -sS --max-time 5 --noproxy '*' http://127.0.0.1:" + port + "/ ; echo rc=$?");
        assertTrue(direct.stdout().contains("rc=7"), "direct connection should be refused: " + direct);
        RunResult dns = sh("python3 -c \"import socket; socket.getaddrinfo('allowed.test', 80)\" 2>&1; echo rc=$?");
        assertTrue(dns.stdout().contains("rc=1") && dns.stdout().contains("gaierror"), "name resolution inside must fail: " + dns);
        RunResult udp = sh("python3 -c \"import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b'x', ('192.0.2.1', 53))\" 2>&1; echo rc=$?");
        // gVisor's own network stack (--network=none) says "No route to host" where Linux says the network is unreachable
        assertTrue(udp.stdout().contains("Network is unreachable")
                || (level() == Level.GVISOR && udp.stdout().contains("No route to host")), udp.toString());
        RunResult raw = sh("python3 -c \"import socket; socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)\" 2>&1; echo rc=$?");
        assertTrue(raw.stdout().contains("Operation not permitted"), raw.toString());
    }

    @Test
    void withoutTheProxy_thereIsNoRouteAndNoDns() throws Exception {
        RunResult direct = sh("busybox wget -q -T 5 -Y off -O - http://192.0.2.1:" + port + "/; echo rc=$?");
        assertTrue(direct.stdout().contains("rc=1"), direct.toString());
        // the network devices of the run's own network namespace (not every level mounts /sys)
        RunResult ifaces = sh("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '");
        assertEquals("lo\n", ifaces.stdout(), ifaces.toString());
        RunResult dns = sh("busybox nslookup allowed.test 2>&1; echo rc=$?");
        assertNotEquals("rc=0", dns.stdout().strip().substring(dns.stdout().strip().lastIndexOf('\n') + 1), dns.toString());
    }

    @Test
    void workspaceInfo_showsEffectivePolicy() throws Exception {
        assertEquals(List.of("allowed.test:[" + port + "]", "also.test:[" + port + "]"), engine.info(Tenant.LOCAL, ws).egressPolicy());
        String narrow = engine.open(Tenant.LOCAL, new OpenRequest(null, "ephemeral", null, null, null,
                List.of("allowed.test:" + port, "github.com"))).workspace().id();
        try {
            assertEquals(List.of("allowed.test:[" + port + "]"), engine.info(Tenant.LOCAL, narrow).egressPolicy());
        } finally {
            engine.closeWorkspace(Tenant.LOCAL, narrow, true);
        }
    }
}
