package dev.berth.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.berth.engine.agent.PortStream;
import dev.berth.engine.namespace.NamespaceDriver;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The engine's exposed ports on the namespace driver (python's http.server inside): an open preview connection is
 * activity for the idle policy, bad arguments are refused, and every exposure and access decision is in the audit
 * trail.
 */
class PortsTest {
    Path home;
    Engine engine;
    String ws;

    @BeforeEach
    void start() throws Exception {
        home = Files.createTempDirectory("berth-ports-");
        engine = Engine.start(EngineConfig.defaults(home, List.of(new NamespaceDriver(home)))
                .withLifecycle(new LifecyclePolicy(3600, 0, 0), Map.of(), 16));
        ws = engine.open(Tenant.LOCAL, OpenRequest.persistent("ports")).workspace().id();
        engine.startBackground(Tenant.LOCAL, new RunRequest(ws, "exec python3 -m http.server 8000 --bind 127.0.0.1", null, null, 3600, null, null));
        RunResult up = engine.run(Tenant.LOCAL, new RunRequest(ws, "python3 -c 'import socket, time\nwhile True:\n    try:\n"
                + "        socket.create_connection((\"127.0.0.1\", 8000)).close(); break\n    except OSError:\n        time.sleep(0.05)'; echo up",
                null, null, 60, null, null), OutputListener.NONE);
        assertEquals("up\n", up.stdout(), up.toString());
    }

    @AfterEach
    void stop() throws Exception {
        if (engine != null) engine.close();
        dev.berth.engine.spi.Trees.delete(home);
    }

    private static final PortStream.Sink NOTHING = new PortStream.Sink() {
        @Override public void onData(ByteBuffer data) { }
        @Override public void onClose() { }
        @Override public void onReset(String reason) { }
    };

    @Test
    void openConnection_countsAsActivity_untilClosed() throws Exception {
        PortExposure e = engine.ports().expose(Tenant.LOCAL, ws, 8000, null, null);
        assertEquals("tenant", e.access());
        assertEquals(null, e.expiresAt());
        Instant connectedAt;
        try (Ports.Connection c = engine.ports().connect(e, NOTHING)) {
            connectedAt = Instant.now();
            // wait on the clock, not a fixed sleep: a second of nothing but an open connection
            while (!Instant.now().isAfter(connectedAt.plusSeconds(1))) Thread.onSpinWait();
            Instant due = engine.info(Tenant.LOCAL, ws).idleParkAt();
            assertTrue(due.isAfter(connectedAt.plusSeconds(3600)), "the open connection is activity now: park due " + due);
        }
        Instant closedAt = Instant.now();
        while (!Instant.now().isAfter(closedAt.plusSeconds(1))) Thread.onSpinWait();
        Instant due = engine.info(Tenant.LOCAL, ws).idleParkAt();
        assertTrue(due.isBefore(Instant.now().plusSeconds(3600)), "closed: the idle clock runs from its end: " + due);
        assertTrue(!due.isBefore(closedAt.minusSeconds(1).plusSeconds(3600)), due.toString());
    }

    @Test
    void badArguments_refusedWithReasons_andNothingListening_isUnavailable() throws Exception {
        assertEquals(EngineException.Kind.INVALID_ARGUMENT, assertThrows(EngineException.class,
                () -> engine.ports().expose(Tenant.LOCAL, ws, 0, null, null)).kind());
        assertTrue(assertThrows(EngineException.class, () -> engine.ports().expose(Tenant.LOCAL, ws, 80, "public", null))
                .getMessage().contains("access must be"));
        assertEquals(EngineException.Kind.INVALID_ARGUMENT, assertThrows(EngineException.class,
                () -> engine.ports().expose(Tenant.LOCAL, ws, 80, "link", 999_999L)).kind());
        Tenant other = new Tenant("other", Tenant.Quota.UNLIMITED);
        assertEquals(EngineException.Kind.NOT_FOUND, assertThrows(EngineException.class,
                () -> engine.ports().expose(other, ws, 8000, null, null)).kind(), "another tenant's workspace is not found");
        PortExposure dead = engine.ports().expose(Tenant.LOCAL, ws, 9, "link", null);
        assertEquals(Instant.now().plusSeconds(Ports.LINK_DEFAULT_TTL_S).getEpochSecond(), dead.expiresAt().getEpochSecond(), 5);
        EngineException x = assertThrows(EngineException.class, () -> engine.ports().connect(dead, NOTHING));
        assertEquals(EngineException.Kind.UNAVAILABLE, x.kind());
        assertTrue(x.getMessage().contains("nothing listens on port 9"), x.getMessage());
        // closing the workspace ends its exposures at once
        engine.closeWorkspace(Tenant.LOCAL, ws, true);
        assertFalse(engine.ports().find(dead.id()).isPresent());
        assertEquals(EngineException.Kind.NOT_FOUND, assertThrows(EngineException.class, () -> engine.ports().connect(dead, NOTHING)).kind());
    }

    @Test
    void exposureAndAccessDecisions_areInTheAuditTrail() throws Exception {
        PortExposure e = engine.ports().expose(Tenant.LOCAL, ws, 8000, "link", 60L);
        engine.ports().recordAccess(e, e.id(), false, "no token", "GET", "/x", "127.0.0.1");
        engine.ports().recordAccess(e, e.id(), true, "link", "GET", "/", "127.0.0.1");
        engine.ports().unexpose(Tenant.LOCAL, ws, 8000);
        assertFalse(engine.ports().find(e.id()).isPresent());
        engine.close();
        engine = null;
        String log = Files.readString(dev.berth.engine.audit.AuditTrail.tenantLog(home.resolve("audit"), "local"));
        assertTrue(log.contains("\"event\":\"expose\""), log);
        assertTrue(log.contains("\"event\":\"unexpose\""), log);
        assertTrue(log.contains("\"allowed\":false") && log.contains("\"reason\":\"no token\""), log);
        assertTrue(log.contains("\"allowed\":true") && log.contains("\"reason\":\"link\""), log);
        assertFalse(log.contains(e.id()), "the whole id (for a link, the credential) is never recorded");
    }
}
