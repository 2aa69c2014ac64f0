package dev.berth.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.berth.proxy.policy.Policy;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;

/**
 * Issue 26, item 2: rate limits that shape instead of refuse. Connection setups are a token bucket with a burst; a setup
 * over the rate waits for its turn (bounded by maxShapingDelayMs) and is refused, naming the limit, only beyond that;
 * the defaults let a large dependency tree's worth of connections through; a tenant's quotas span its workspaces and
 * outlive them. A fake clock and timer ({@link FakeDelays}) release delayed setups without waiting in real time.
 */
class ShapingTest {
    final FakeDelays delays = new FakeDelays();

    private Harness harness(UnaryOperator<ProxyConfig.Builder> tweak) throws IOException {
        return new Harness((h, b) -> tweak.apply(b), delays.now::get, delays);
    }

    private static String connect(Harness h) {
        return "CONNECT allowed.test:" + h.plainEcho.port() + " HTTP/1.1\r\n\r\n";
    }

    private static Socket open(Harness h, EgressProxy.Listener l) throws IOException {
        Socket s = new Socket();
        s.connect(l.address(), 2000);
        s.setSoTimeout(5000);
        return s;
    }

    @Test
    void setupsOverTheRate_waitForTheirTurn_thenRefusedOnlyBeyondTheBound() throws Exception {
        try (Harness h = harness(b -> b.maxConnectsPerSecond(5).connectBurst(5).maxShapingDelay(Duration.ofSeconds(1)))) {
            for (int i = 0; i < 5; i++) assertEquals(200, h.send(connect(h)).status(), "burst connect " + i);
            // the next five wait 200, 400, ... 1000 ms for their turn: no answer until the clock gets there
            List<Socket> waiting = new ArrayList<>();
            for (int i = 0; i < 5; i++) {
                Socket s = h.connect();
                Harness.write(s, connect(h));
                waiting.add(s);
                int n = i + 1;
                Harness.await(() -> delays.pending() == n, "setup " + n + " is waiting for its turn");
            }
            Harness.Response refused = h.send(connect(h));
            assertEquals(429, refused.status());
            assertEquals("workspace 'ws-test' sets up connections faster than 5 per second beyond a burst of 5 (maxConnectsPerSecond): the next"
                    + " one would wait 1200 ms, longer than maxShapingDelayMs (1000 ms)", refused.header("X-Berth-Denial"));
            delays.advance(Duration.ofMillis(200));
            assertEquals(200, Harness.Response.read(waiting.get(0).getInputStream()).status(), "the first waiting setup had its turn");
            delays.advance(Duration.ofMillis(800));
            for (Socket s : waiting) {
                if (s != waiting.get(0)) assertEquals(200, Harness.Response.read(s.getInputStream()).status());
                s.close();
            }
            Decision shaped = Harness.first(h.decisions, d -> d.allowed() && d.reason().contains("waited 1000 ms for its turn (maxConnectsPerSecond)"));
            assertTrue(shaped != null, "the decision says the setup was shaped: " + h.decisions);
        }
    }

    @Test
    void plainHttpDial_overTheRate_waitsForItsTurn() throws Exception {
        try (Harness h = harness(b -> b.maxConnectsPerSecond(1).connectBurst(1).maxShapingDelay(Duration.ofSeconds(2)))) {
            int p = h.http.port();
            String get = "GET http://allowed.test:" + p + "/one HTTP/1.1\r\nHost: allowed.test:" + p + "\r\nConnection: close\r\n\r\n";
            assertEquals(200, h.send(get).status());
            try (Socket s = h.connect()) {
                Harness.write(s, get.replace("/one", "/two"));
                Harness.await(() -> delays.pending() == 1, "the second dial waits");
                assertEquals(List.of("/one"), List.copyOf(h.http.seenPaths));
                delays.advance(Duration.ofSeconds(1));
                assertEquals(200, Harness.Response.read(s.getInputStream()).status());
            }
            assertEquals(List.of("/one", "/two"), List.copyOf(h.http.seenPaths));
        }
    }

    @Test
    void defaults_aLargeInstallsBurstOfSetups_noneRefused() throws Exception {
        // 790 packages met 274 refusals at the old 30 per second; the default burst takes a tree of that size at once
        try (Harness h = harness(b -> b)) {
            for (int i = 0; i < 900; i++) {
                try (Socket s = h.connect()) {
                    Harness.write(s, connect(h));
                    assertEquals(200, Harness.Response.read(s.getInputStream()).status(), "setup " + i);
                }
            }
            assertEquals(0, delays.pending());
        }
    }

    @Test
    void tenantRate_spansItsWorkspaces_refusalNamesTheTenantLimit() throws Exception {
        try (Harness h = harness(b -> b.maxConnectsPerSecondPerTenant(3).connectBurstPerTenant(3).maxShapingDelay(Duration.ZERO));
             EgressProxy.Listener a = tenantListener(h, "ws-a", "acme");
             EgressProxy.Listener b = tenantListener(h, "ws-b", "acme")) {
            for (EgressProxy.Listener l : List.of(a, a, b)) {
                try (Socket s = open(h, l)) {
                    Harness.write(s, connect(h));
                    assertEquals(200, Harness.Response.read(s.getInputStream()).status());
                }
            }
            try (Socket s = open(h, b)) {
                Harness.write(s, connect(h));
                Harness.Response r = Harness.Response.read(s.getInputStream());
                assertEquals(429, r.status());
                assertTrue(r.header("X-Berth-Denial").startsWith("tenant 'acme' sets up connections faster than 3 per second beyond a burst of 3"
                        + " (maxConnectsPerSecondPerTenant)"), r.header("X-Berth-Denial"));
            }
        }
    }

    @Test
    void closingAndReopeningAWorkspace_doesNotResetItsQuotas_norDoesANewWorkspaceOfTheTenant() throws Exception {
        try (Harness h = harness(b -> b.maxBytesPerWorkspace(600).maxBytesPerTenant(900).quotaWindow(Duration.ofMinutes(1))
                .maxShapingDelay(Duration.ZERO))) {
            int p = h.http.port();
            String get = "GET http://allowed.test:" + p + "/q HTTP/1.1\r\nHost: allowed.test:" + p + "\r\nConnection: close\r\n\r\n";
            EgressProxy.Listener first = tenantListener(h, "ws-a", "acme");
            int status = 200;
            for (int i = 0; i < 20 && status == 200; i++) status = send(h, first, get).status();
            assertEquals(429, send(h, first, get).status(), "ws-a used its quota");
            first.close();
            h.proxy.forgetWorkspace("ws-a"); // closed
            try (EgressProxy.Listener again = tenantListener(h, "ws-a", "acme")) {
                Harness.Response r = send(h, again, get);
                assertEquals(429, r.status(), "reopened under the same id: the quota is not reset");
                assertTrue(r.header("X-Berth-Denial").startsWith("workspace 'ws-a' used its byte quota of 600 bytes"), r.header("X-Berth-Denial"));
            }
            try (EgressProxy.Listener other = tenantListener(h, "ws-b", "acme")) {
                status = 200;
                Harness.Response r = null;
                for (int i = 0; i < 20 && status == 200; i++) status = (r = send(h, other, get)).status();
                if (status == -1) r = send(h, other, get);
                assertEquals(429, r.status());
                assertTrue(r.header("X-Berth-Denial").startsWith("tenant 'acme' used its byte quota of 900 bytes (maxBytesPerTenant"),
                        r.header("X-Berth-Denial"));
            }
            delays.now.addAndGet(Duration.ofMinutes(2).toNanos()); // both buckets refilled
            try (EgressProxy.Listener later = tenantListener(h, "ws-a", "acme")) {
                assertEquals(200, send(h, later, get).status());
            }
        }
    }

    private static Harness.Response send(Harness h, EgressProxy.Listener l, String raw) throws IOException {
        try (Socket s = open(h, l)) {
            Harness.write(s, raw);
            return Harness.Response.read(s.getInputStream());
        }
    }

    private static EgressProxy.Listener tenantListener(Harness h, String ws, String tenant) throws IOException {
        Policy ceiling = h.config.ceiling();
        return h.proxy.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0),
                new EgressContext(ws, "run-" + ws, ceiling, h.decisions::add, java.util.Set.of(), tenant, null));
    }
}
