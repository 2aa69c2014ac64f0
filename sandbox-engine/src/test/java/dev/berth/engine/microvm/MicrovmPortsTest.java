package dev.berth.engine.microvm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.berth.engine.Engine;
import dev.berth.engine.EngineConfig;
import dev.berth.engine.EngineException;
import dev.berth.engine.OpenRequest;
import dev.berth.engine.OutputListener;
import dev.berth.engine.PortExposure;
import dev.berth.engine.RunRequest;
import dev.berth.engine.RunResult;
import dev.berth.engine.Tenant;
import dev.berth.engine.WorkspaceState;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Exposed ports on the microVM driver through the engine API (no MCP): the guest has no network device, so busybox
 * httpd inside is reached only over the agent's PORT_OPEN stream; a connection to the parked workspace resumes it
 * (memory kept, so the server still runs), and the exposure survives an engine restart with the same id.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class MicrovmPortsTest {
    Path home;
    Engine engine;
    String ws;

    @BeforeAll
    void start() throws Exception {
        home = Files.createTempDirectory("berth-vm-ports-");
        engine = engine();
        ws = engine.open(Tenant.LOCAL, OpenRequest.persistent("ports")).workspace().id();
        engine.writeFile(Tenant.LOCAL, ws, "/workspace/www/hello.txt", "hello from the guest\n".getBytes(StandardCharsets.UTF_8), false, null);
        engine.startBackground(Tenant.LOCAL, new RunRequest(ws, "exec busybox httpd -f -p 127.0.0.1:8080 -h /workspace/www", null, null, 3600, null, null));
        RunResult up = engine.run(Tenant.LOCAL, new RunRequest(ws, "until busybox nc 127.0.0.1 8080 </dev/null; do sleep 0.1; done; echo up",
                null, null, 120, null, null), OutputListener.NONE);
        assertEquals("up\n", up.stdout(), up.toString());
    }

    private Engine engine() throws EngineException {
        return Engine.start(EngineConfig.defaults(home, List.of(new MicrovmDriver(TestImages.builder(), MicrovmDriver.ImageKind.TEST))));
    }

    @AfterAll
    void stop() throws Exception {
        if (engine != null) engine.close();
        if (home != null) dev.berth.engine.spi.Trees.delete(home);
    }

    private String get(PortExposure e, String path) throws Exception {
        return dev.berth.engine.PortExchange.get(engine, e, "localhost:8080", path);
    }

    @Test
    void exposedPort_servedOverTheAgent_wakesParkedWorkspace_survivesRestart() throws Exception {
        PortExposure e = engine.ports().expose(Tenant.LOCAL, ws, 8080, "link", 600L);
        String first = get(e, "/hello.txt");
        assertTrue(first.startsWith("HTTP/1.") && first.contains(" 200 ") && first.endsWith("hello from the guest\n"), first);

        engine.park(Tenant.LOCAL, ws);
        assertEquals(WorkspaceState.PARKED, engine.info(Tenant.LOCAL, ws).state());
        String woke = get(e, "/hello.txt");
        assertTrue(woke.endsWith("hello from the guest\n"), "memory kept: httpd answers after the wake: " + woke);
        assertEquals(WorkspaceState.RUNNING, engine.info(Tenant.LOCAL, ws).state());

        engine.close();
        engine = engine();
        List<PortExposure> after = engine.ports().list(Tenant.LOCAL, ws);
        assertEquals(1, after.size(), after.toString());
        assertEquals(e.id(), after.getFirst().id(), "the same URL after a restart");
        assertTrue(engine.ports().find(e.id()).isPresent());
        assertFalse(engine.ports().find("a".repeat(32)).isPresent());
    }
}
