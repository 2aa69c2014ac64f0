package dev.berth.engine.gvisor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.berth.engine.Engine;
import dev.berth.engine.EngineConfig;
import dev.berth.engine.EngineException;
import dev.berth.engine.OpenRequest;
import dev.berth.engine.OutputListener;
import dev.berth.engine.PortExposure;
import dev.berth.engine.RunRequest;
import dev.berth.engine.RunResult;
import dev.berth.engine.Tenant;
import dev.berth.engine.agent.PortStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Exposed ports on the gVisor driver through the engine API: the same guest agent as the other drivers, so python's
 * http.server inside the sandbox is reached over the agent's PORT_OPEN stream (the sandbox's network is not used);
 * a port nothing listens on is refused with a reason, not a hang. Skipped, with the probe's reason, when runsc cannot
 * run here.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class GvisorPortsTest {
    Path home;
    Engine engine;
    String ws;

    @BeforeAll
    void start() throws Exception {
        home = Files.createTempDirectory("berth-gvisor-ports-");
        GvisorDriver d = new GvisorDriver(home);
        assumeTrue(d.probe().available(), () -> "gVisor cannot run here: " + d.probe().reason());
        engine = Engine.start(EngineConfig.defaults(home, List.of(d)));
        ws = engine.open(Tenant.LOCAL, OpenRequest.persistent("ports")).workspace().id();
        engine.writeFile(Tenant.LOCAL, ws, "/workspace/www/hello.txt", "hello from gvisor\n".getBytes(StandardCharsets.UTF_8), false, null);
        engine.startBackground(Tenant.LOCAL, new RunRequest(ws, "cd /workspace/www && exec python3 -m http.server 8000 --bind 127.0.0.1",
                null, null, 3600, null, null));
        RunResult up = engine.run(Tenant.LOCAL, new RunRequest(ws, "python3 -c 'import socket, time\nwhile True:\n    try:\n"
                + "        socket.create_connection((\"127.0.0.1\", 8000)).close(); break\n    except OSError:\n        time.sleep(0.05)'; echo up",
                null, null, 120, null, null), OutputListener.NONE);
        assertEquals("up\n", up.stdout(), up.toString());
    }

    @AfterAll
    void stop() throws Exception {
        if (engine != null) engine.close();
        if (home != null) dev.berth.engine.spi.Trees.delete(home);
    }

    private String get(PortExposure e, String path) throws Exception {
        return dev.berth.engine.PortExchange.get(engine, e, "localhost:8000", path);
    }

    @Test
    void exposedPort_servedOverTheAgent_deadPortRefusedWithAReason() throws Exception {
        PortExposure e = engine.ports().expose(Tenant.LOCAL, ws, 8000, "link", 600L);
        String page = get(e, "/hello.txt");
        assertTrue(page.startsWith("HTTP/1.") && page.contains(" 200 ") && page.endsWith("hello from gvisor\n"), page);
        String again = get(e, "/hello.txt");
        assertTrue(again.endsWith("hello from gvisor\n"), "a second stream on the same exposure: " + again);

        PortExposure dead = engine.ports().expose(Tenant.LOCAL, ws, 9, "link", 600L);
        long t0 = System.nanoTime();
        EngineException x = assertThrows(EngineException.class, () -> engine.ports().connect(dead, new PortStream.Sink() {
            @Override public void onData(ByteBuffer data) { }
            @Override public void onClose() { }
            @Override public void onReset(String reason) { }
        }).close());
        assertTrue(x.getMessage().contains("nothing listens on port 9"), x.getMessage());
        assertTrue(System.nanoTime() - t0 < TimeUnit.SECONDS.toNanos(60), "refused, not a hang");
    }
}
