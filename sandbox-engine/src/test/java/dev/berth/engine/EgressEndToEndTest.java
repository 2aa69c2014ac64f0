package dev.berth.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpServer;
import dev.berth.engine.namespace.NamespaceDriver;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * From inside a real workspace: the only way out is the agent's proxy port, through the egress proxy, to what the
 * policy names. The upstream is a real HTTP server on this machine's loopback; a test resolver maps test names to it,
 * allowed only with the proxy's unsafe loopback setting.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class EgressEndToEndTest {
    Path home;
    HttpServer upstream;
    int port;
    Engine engine;
    String ws;

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
        home = Files.createTempDirectory("berth-egress-");
        EgressSettings egress = EgressFixture.proxy(List.of("allowed.test:" + port, "also.test:" + port));
        engine = Engine.start(EngineConfig.defaults(home, List.of(new NamespaceDriver(home)))
                .withEgress(egress));
        ws = engine.open(Tenant.LOCAL, OpenRequest.ephemeral()).workspace().id();
    }

    @AfterAll
    void stop() throws Exception {
        engine.close();
        upstream.stop(0);
        dev.berth.engine.spi.Trees.delete(home);
    }

    static final long BIG = 32L << 20;

    /**
     * Reported: the host pushed an upstream's bytes at the workspace as fast as it read them, and the agent reset a
     * tunnel whose client fell 8 MiB behind ("tunnel client is not reading"), so a download read slower than the
     * upstream sends (a throttled disk, a busy guest, here curl's --limit-rate) failed. With flow control end to end
     * the proxy reads the upstream only as fast as the client inside takes it: both the CONNECT tunnel and a plain
     * forwarded request deliver every byte.
     */
    @Test
    void slowReaderInside_bigDownload_flowControlledEndToEnd_everyByteArrives() throws Exception {
        for (String how : List.of("--proxytunnel ", "")) {
            RunResult r = engine.run(Tenant.LOCAL, new RunRequest(ws, "curl -sS --max-time 120 --limit-rate 8M " + how
                    + "-o /dev/null -w '%{size_download}' http://allowed.test:" + port + "/big", null, null, 150, null, null),
                    OutputListener.NONE);
            assertEquals(0, r.exitCode(), how + r);
            assertEquals(Long.toString(BIG), r.stdout(), how + r);
        }
    }

    RunResult sh(String cmd) throws EngineException {
        return engine.run(Tenant.LOCAL, RunRequest.of(ws, cmd), OutputListener.NONE);
    }

    @Test
    void allowedHost_plainHttpAndConnect_reachUpstream() throws Exception {
        RunResult r = sh("curl -sS --max-time 20 http://allowed.test:" + port + "/plain");
        assertEquals("hello from upstream /plain", r.stdout(), r.toString());
        RunResult t = sh("curl -sS --max-time 20 --proxytunnel http://allowed.test:" + port + "/tunnel");
        assertEquals("hello from upstream /tunnel", t.stdout(), t.toString());
        assertEquals(List.of(), t.egressDenied());
    }

    @Test
    void deniedHost_failsAndRunResultSaysWhy() throws Exception {
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
    void hostlessDenials_bareGetAndHttp2Preface_reportedWithNullHost_resultKept() throws Exception {
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

    ProcessStatus waitFor(ProcessStatus p) throws EngineException {
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

    @Test
    void backgroundRunNarrowing_appliesToItsOwnConnections() throws Exception {
        ProcessStatus bg = engine.startBackground(Tenant.LOCAL, new RunRequest(ws, "curl -sS --max-time 20 -o /dev/null -w '%{http_code}'"
                + " http://allowed.test:" + port + "/bg", null, Map.of(), null, null, null, List.of("also.test:" + port), null));
        ProcessStatus done = waitFor(bg);
        assertEquals("403", done.stdout(), done.toString());
        // the narrowing was the background run's own: a foreground run meanwhile and afterwards is not narrowed by it
        assertEquals("hello from upstream /fg", sh("curl -sS --max-time 20 http://allowed.test:" + port + "/fg").stdout());
    }

    @Test
    void denialOfABackgroundRun_isNotReportedToAConcurrentForegroundRun() throws Exception {
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
        RunResult narrowed = engine.run(Tenant.LOCAL, new RunRequest(ws, "curl -sS --max-time 20 http://allowed.test:" + port + "/",
                null, Map.of(), null, null, null, List.of("also.test:" + port)), OutputListener.NONE);
        assertNotEquals("hello from upstream /", narrowed.stdout());
        assertEquals("allowed.test", narrowed.egressDenied().get(0).host(), narrowed.toString());
        RunResult widen = engine.run(Tenant.LOCAL, new RunRequest(ws, "curl -sS --max-time 20 http://elsewhere.test:" + port + "/",
                null, Map.of(), null, null, null, List.of("elsewhere.test:" + port)), OutputListener.NONE);
        assertEquals("elsewhere.test", widen.egressDenied().get(0).host(), "a run must not widen the policy: " + widen);
    }

    @Test
    void bypassAttempts_findNoRoute() throws Exception {
        // no proxy: direct TCP to the host's loopback service, DNS, UDP, raw sockets
        RunResult direct = sh("curl -sS --max-time 5 --noproxy '*' http://127.0.0.1:" + port + "/ ; echo rc=$?");
        assertTrue(direct.stdout().contains("rc=7"), "direct connection should be refused: " + direct);
        RunResult dns = sh("python3 -c \"import socket; socket.getaddrinfo('allowed.test', 80)\" 2>&1; echo rc=$?");
        assertTrue(dns.stdout().contains("rc=1") && dns.stdout().contains("gaierror"), "name resolution inside must fail: " + dns);
        RunResult udp = sh("python3 -c \"import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b'x', ('192.0.2.1', 53))\" 2>&1; echo rc=$?");
        assertTrue(udp.stdout().contains("Network is unreachable"), udp.toString());
        RunResult raw = sh("python3 -c \"import socket; socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)\" 2>&1; echo rc=$?");
        assertTrue(raw.stdout().contains("Operation not permitted"), raw.toString());
    }

    @Test
    void workspaceInfo_showsEffectivePolicy() throws Exception {
        assertEquals(List.of("allowed.test:[" + port + "]", "also.test:[" + port + "]"), engine.info(Tenant.LOCAL, ws).egressPolicy());
        String narrow = engine.open(Tenant.LOCAL, new OpenRequest(null, "ephemeral", null, null, null,
                List.of("allowed.test:" + port, "github.com"))).workspace().id();
        assertEquals(List.of("allowed.test:[" + port + "]"), engine.info(Tenant.LOCAL, narrow).egressPolicy());
        engine.closeWorkspace(Tenant.LOCAL, narrow, true);
    }
}
