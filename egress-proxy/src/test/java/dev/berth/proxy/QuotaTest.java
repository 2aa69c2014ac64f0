package dev.berth.proxy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.Socket;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * Issue 16, finding 5: quotas that stop traffic. Heads count toward the byte quota, a used-up quota refuses every
 * further request and CONNECT before it reaches an upstream until the operator's window resets, and connection
 * setup is rate-limited. A fake clock makes the windows deterministic.
 */
class QuotaTest {
    final AtomicLong now = new AtomicLong(1_000_000_000L);

    private static String get(Harness h, String path) {
        int p = h.http.port();
        return "GET http://allowed.test:" + p + path + " HTTP/1.1\r\nHost: allowed.test:" + p + "\r\nConnection: close\r\n\r\n";
    }

    @Test
    void byteQuotaUsedUp_furtherRequestsAndConnectsRefused429_neverReachUpstream_untilWindowResets() throws Exception {
        try (Harness h = new Harness(b -> b.maxBytesPerWorkspace(1500).quotaWindow(Duration.ofMinutes(1)).maxShapingDelay(Duration.ZERO), now::get)) {
            int reached = 0;
            Harness.Response r = null;
            for (int i = 0; i < 50; i++) {
                r = h.send(get(h, "/q" + i));
                if (r.status() != 200) break;
                reached++;
            }
            assertTrue(r.status() != 200, "requests with small bodies kept reaching the upstream: heads were not counted");
            if (r.status() == -1) {
                reached++; // the request that crossed the quota reached the upstream; its response was cut
                r = h.send(get(h, "/next"));
            }
            assertEquals(429, r.status(), r.toString());
            String why = r.header("X-Berth-Denial");
            assertTrue(why.startsWith("workspace 'ws-test' used its byte quota of 1500 bytes (maxBytesPerWorkspace, heads and bodies,"
                    + " refilled over 60 s: quotaWindowMs); egress resumes in "), why);
            assertTrue(reached > 0 && reached < 20, "reached " + reached);
            assertEquals(reached, h.http.seenPaths.size());
            // stopped, not just slowed: more requests and a CONNECT are refused, none reaches an upstream
            assertEquals(429, h.send(get(h, "/again")).status());
            int accepted = h.plainEcho.accepted.size();
            try (Socket s = h.connect()) {
                Harness.write(s, "CONNECT allowed.test:" + h.plainEcho.port() + " HTTP/1.1\r\n\r\n");
                assertEquals(429, Harness.Response.read(s.getInputStream()).status());
            }
            assertEquals(reached, h.http.seenPaths.size());
            assertEquals(accepted, h.plainEcho.accepted.size());
            now.addAndGet(Duration.ofSeconds(61).toNanos()); // the bucket refilled
            assertEquals(200, h.send(get(h, "/after")).status());
        }
    }

    @Test
    void connectionSetupFasterThanTheRate_noWaitAllowed_refused429WithReason_thenRefilled() throws Exception {
        try (Harness h = new Harness(b -> b.maxConnectsPerSecond(5).connectBurst(5).maxShapingDelay(Duration.ZERO), now::get)) {
            String connect = "CONNECT allowed.test:" + h.plainEcho.port() + " HTTP/1.1\r\n\r\n";
            for (int i = 0; i < 5; i++) {
                try (Socket s = h.connect()) {
                    Harness.write(s, connect);
                    assertEquals(200, Harness.Response.read(s.getInputStream()).status(), "connect " + i);
                }
            }
            Harness.Response r = h.send(connect);
            assertEquals(429, r.status());
            assertEquals("workspace 'ws-test' sets up connections faster than 5 per second beyond a burst of 5 (maxConnectsPerSecond): the next"
                    + " one would wait 200 ms, longer than maxShapingDelayMs (0 ms)", r.header("X-Berth-Denial"));
            assertEquals(429, h.send(get(h, "/too-fast")).status(), "plain HTTP dials take tokens too");
            now.addAndGet(Duration.ofMillis(400).toNanos()); // two tokens back
            assertEquals(200, h.send(connect).status());
            assertEquals(200, h.send(get(h, "/ok")).status());
            assertEquals(429, h.send(connect).status());
        }
    }
}
