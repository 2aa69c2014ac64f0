package dev.berth.engine.contract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.berth.engine.Await;
import dev.berth.engine.Engine;
import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.LifecyclePolicy;
import dev.berth.engine.api.OpenRequest;
import dev.berth.engine.api.OutputListener;
import dev.berth.engine.api.PortExposure;
import dev.berth.engine.Ports;
import dev.berth.engine.api.RunRequest;
import dev.berth.engine.api.RunResult;
import dev.berth.engine.api.Tenant;
import dev.berth.engine.api.WorkspaceInfo;
import dev.berth.engine.api.WorkspaceState;
import dev.berth.engine.audit.AuditTrail;
import dev.berth.engine.spi.Trees;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * The exposed-ports contract through the engine API on every level: busybox httpd inside the workspace is reached
 * only over the agent's PORT_OPEN stream (no level gives the sandbox a usable network), a port nothing listens on is
 * refused with a reason rather than a hang, bad arguments are refused with reasons, an open connection is activity
 * for the idle policy, every exposure and access decision is in the audit trail, a connection to a parked workspace
 * resumes it (where park keeps memory, the server still answers), and an exposure survives an engine restart with
 * the same id.
 *
 * <p>Cost: one engine and one persistent workspace with the server for the whole class; the case that closes its
 * workspace has its own, and the restart runs last. Every case ends with no exposure left on the shared workspace.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
public abstract class AbstractPortsContractTest {
    private static final int PORT = 8080;
    /** A second server, on [::1] only. */
    private static final int PORT6 = 8081;
    private static final String HELLO = "hello from the guest\n";

    private Path home;
    private Engine engine;
    private String ws;

    /** The level under test. */
    protected abstract Level level();

    @BeforeAll
    void start() throws Exception {
        home = Files.createTempDirectory("berth-ports-contract-");
        engine = engine();
        ws = engine.open(Tenant.LOCAL, OpenRequest.persistent("ports")).workspace().id();
        engine.writeFile(Tenant.LOCAL, ws, "/workspace/www/hello.txt", HELLO.getBytes(StandardCharsets.UTF_8), false, null);
        engine.startBackground(Tenant.LOCAL, new RunRequest(ws, "exec busybox httpd -f -p 127.0.0.1:" + PORT + " -h /workspace/www",
                null, null, 3600, null, null));
        RunResult up = engine.run(Tenant.LOCAL, new RunRequest(ws, "until busybox nc 127.0.0.1 " + PORT + " </dev/null; do sleep 0.1; done;"
                + " echo up", null, null, 120, null, null), OutputListener.NONE);
        assertEquals("up\n", up.stdout(), up.toString());
    }

    /** Idle parking after an hour: long enough that nothing parks during the class, and a due time to read back. */
    private Engine engine() throws EngineException {
        return level().start(home, c -> c.withLifecycle(new LifecyclePolicy(3600, 0, 0), Map.of(), 16));
    }

    @AfterEach
    void unexposeAll() throws EngineException {
        for (PortExposure e : engine.ports().list(Tenant.LOCAL, ws)) engine.ports().unexpose(Tenant.LOCAL, ws, e.port());
    }

    @AfterAll
    void stop() throws Exception {
        if (engine != null) engine.close();
        if (home != null) Trees.delete(home);
    }

    private String get(PortExposure e, String path) throws Exception {
        return PortClient.get(engine, e, "localhost:" + PORT, path);
    }

    /** Waits (on the clock, not a fixed sleep) until {@code from} is more than a second ago. */
    private static void aSecondAfter(Instant from) throws Exception {
        Await.until("a second has passed", () -> Instant.now().isAfter(from.plusSeconds(1)));
    }

    // ---------------------------------------------------------------- serving

    @Test
    @Order(1)
    void exposedPort_servedOverTheAgent_secondStreamToo() throws Exception {
        PortExposure e = engine.ports().expose(Tenant.LOCAL, ws, PORT, "link", 600L);
        String page = get(e, "/hello.txt");
        assertTrue(page.startsWith("HTTP/1.") && page.contains(" 200 ") && page.endsWith(HELLO), page);
        String again = get(e, "/hello.txt");
        assertTrue(again.endsWith(HELLO), "a second stream on the same exposure: " + again);
    }

    /**
     * A server that listens on [::1] alone (what "localhost" gives a Node 17+ dev server where the name resolves to ::1
     * first) is reached: the agent tries ::1 when 127.0.0.1 refuses. Skipped where the level's sandbox has no IPv6
     * loopback.
     */
    @Test
    @Order(1)
    void serverOnIpv6LoopbackOnly_reachedThroughTheFallback() throws Exception {
        RunResult lo6 = engine.run(Tenant.LOCAL, new RunRequest(ws, "grep -q '^0\\{31\\}1 ' /proc/net/if_inet6 2>/dev/null && echo yes",
                null, null, 60, null, null), OutputListener.NONE);
        assumeTrue(lo6.stdout().contains("yes"), "no IPv6 loopback in this level's sandbox: " + lo6);
        engine.startBackground(Tenant.LOCAL, new RunRequest(ws, "exec busybox httpd -f -p '[::1]:" + PORT6 + "' -h /workspace/www",
                null, null, 3600, null, null));
        RunResult up = engine.run(Tenant.LOCAL, new RunRequest(ws, "until busybox nc ::1 " + PORT6 + " </dev/null; do sleep 0.1; done;"
                + " echo up", null, null, 120, null, null), OutputListener.NONE);
        assertEquals("up\n", up.stdout(), up.toString());
        PortExposure e = engine.ports().expose(Tenant.LOCAL, ws, PORT6, "link", 600L);
        String page = PortClient.get(engine, e, "localhost:" + PORT6, "/hello.txt");
        assertTrue(page.startsWith("HTTP/1.") && page.contains(" 200 ") && page.endsWith(HELLO), page);
    }

    @Test
    @Order(2)
    void deadPort_refusedWithAReason_notAHang() throws Exception {
        PortExposure dead = engine.ports().expose(Tenant.LOCAL, ws, 9, "link", 600L);
        long t0 = System.nanoTime();
        EngineException x = assertThrows(EngineException.class, () -> engine.ports().connect(dead, PortClient.NOTHING).close());
        assertEquals(EngineException.Kind.UNAVAILABLE, x.kind());
        assertTrue(x.getMessage().contains("nothing listens on port 9"), x.getMessage());
        assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(60), "refused, not a hang");
    }

    @Test
    @Order(3)
    void openConnection_countsAsActivity_untilClosed() throws Exception {
        PortExposure e = engine.ports().expose(Tenant.LOCAL, ws, PORT, null, null);
        assertEquals("tenant", e.access());
        assertEquals(null, e.expiresAt());
        Instant connectedAt;
        try (Ports.Connection c = engine.ports().connect(e, PortClient.NOTHING)) {
            connectedAt = Instant.now();
            aSecondAfter(connectedAt); // a second of nothing but an open connection
            Instant due = engine.info(Tenant.LOCAL, ws).idleParkAt();
            assertTrue(due.isAfter(connectedAt.plusSeconds(3600)), "the open connection is activity now: park due " + due);
        }
        Instant closedAt = Instant.now();
        aSecondAfter(closedAt);
        Instant due = engine.info(Tenant.LOCAL, ws).idleParkAt();
        assertTrue(due.isBefore(Instant.now().plusSeconds(3600)), "closed: the idle clock runs from its end: " + due);
        assertTrue(!due.isBefore(closedAt.minusSeconds(1).plusSeconds(3600)), due.toString());
    }

    // ---------------------------------------------------------------- refusals and the record

    @Test
    @Order(4)
    void badArguments_refusedWithReasons_andNothingListening_isUnavailable() throws Exception {
        String own = engine.open(Tenant.LOCAL, OpenRequest.ephemeral()).workspace().id(); // this case closes it
        assertEquals(EngineException.Kind.INVALID_ARGUMENT, assertThrows(EngineException.class,
                () -> engine.ports().expose(Tenant.LOCAL, own, 0, null, null)).kind());
        assertTrue(assertThrows(EngineException.class, () -> engine.ports().expose(Tenant.LOCAL, own, 80, "public", null))
                .getMessage().contains("access must be"));
        assertEquals(EngineException.Kind.INVALID_ARGUMENT, assertThrows(EngineException.class,
                () -> engine.ports().expose(Tenant.LOCAL, own, 80, "link", 999_999L)).kind());
        Tenant other = new Tenant("other", Tenant.Quota.UNLIMITED);
        assertEquals(EngineException.Kind.NOT_FOUND, assertThrows(EngineException.class,
                () -> engine.ports().expose(other, own, PORT, null, null)).kind(), "another tenant's workspace is not found");
        PortExposure dead = engine.ports().expose(Tenant.LOCAL, own, 9, "link", null);
        assertEquals(Instant.now().plusSeconds(Ports.LINK_DEFAULT_TTL_S).getEpochSecond(), dead.expiresAt().getEpochSecond(), 5);
        EngineException x = assertThrows(EngineException.class, () -> engine.ports().connect(dead, PortClient.NOTHING));
        assertEquals(EngineException.Kind.UNAVAILABLE, x.kind());
        assertTrue(x.getMessage().contains("nothing listens on port 9"), x.getMessage());
        // closing the workspace ends its exposures at once
        engine.closeWorkspace(Tenant.LOCAL, own, true);
        assertFalse(engine.ports().find(dead.id()).isPresent());
        assertEquals(EngineException.Kind.NOT_FOUND, assertThrows(EngineException.class,
                () -> engine.ports().connect(dead, PortClient.NOTHING)).kind());
    }

    @Test
    @Order(5)
    void exposureAndAccessDecisions_areInTheAuditTrail() throws Exception {
        PortExposure e = engine.ports().expose(Tenant.LOCAL, ws, PORT, "link", 60L);
        engine.ports().recordAccess(e, e.id(), false, "no token", "GET", "/x", "127.0.0.1");
        engine.ports().recordAccess(e, e.id(), true, "link", "GET", "/", "127.0.0.1");
        engine.ports().unexpose(Tenant.LOCAL, ws, PORT);
        assertFalse(engine.ports().find(e.id()).isPresent());
        // records nobody waits for reach the file from the trail's flusher a moment later
        Path file = AuditTrail.tenantLog(home.resolve("audit"), "local");
        String[] log = new String[1];
        try {
            Await.until("the access records are in the tenant's audit log", () -> {
                log[0] = Files.exists(file) ? Files.readString(file) : "";
                return log[0].contains("\"event\":\"unexpose\"") && log[0].contains("\"reason\":\"no token\"")
                        && log[0].contains("\"reason\":\"link\"");
            });
        } catch (AssertionError timedOut) {
            // the assertions below say what is missing
        }
        assertTrue(log[0].contains("\"event\":\"expose\""), log[0]);
        assertTrue(log[0].contains("\"event\":\"unexpose\""), log[0]);
        assertTrue(log[0].contains("\"allowed\":false") && log[0].contains("\"reason\":\"no token\""), log[0]);
        assertTrue(log[0].contains("\"allowed\":true") && log[0].contains("\"reason\":\"link\""), log[0]);
        assertFalse(log[0].contains(e.id()), "the whole id (for a link, the credential) is never recorded");
    }

    // ---------------------------------------------------------------- park and restart

    @Test
    @Order(6)
    void connectionToParkedWorkspace_resumesIt_serverStillAnswers() throws Exception {
        WorkspaceInfo info = engine.info(Tenant.LOCAL, ws);
        assumeTrue(info.capabilities().parkKeepsMemory(),
                () -> info.isolation() + ": park keeps files only, so the server inside does not outlive a park");
        PortExposure e = engine.ports().expose(Tenant.LOCAL, ws, PORT, "link", 600L);
        engine.park(Tenant.LOCAL, ws);
        assertEquals(WorkspaceState.PARKED, engine.info(Tenant.LOCAL, ws).state());
        String woke = get(e, "/hello.txt");
        assertTrue(woke.endsWith(HELLO), "memory kept: httpd answers after the wake: " + woke);
        assertEquals(WorkspaceState.RUNNING, engine.info(Tenant.LOCAL, ws).state());
    }

    /** Runs last: the restarted engine no longer has the server running on levels whose park keeps files only. */
    @Test
    @Order(7)
    void exposure_survivesAnEngineRestart_withTheSameId() throws Exception {
        PortExposure e = engine.ports().expose(Tenant.LOCAL, ws, PORT, "link", 600L);
        String first = get(e, "/hello.txt");
        assertTrue(first.startsWith("HTTP/1.") && first.contains(" 200 ") && first.endsWith(HELLO), first);
        engine.close();
        engine = null;
        engine = engine();
        List<PortExposure> after = engine.ports().list(Tenant.LOCAL, ws);
        assertEquals(1, after.size(), after.toString());
        assertEquals(e.id(), after.getFirst().id(), "the same URL after a restart");
        assertTrue(engine.ports().find(e.id()).isPresent());
        assertFalse(engine.ports().find("a".repeat(32)).isPresent());
    }
}
