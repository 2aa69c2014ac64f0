package dev.berth.engine.namespace;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.berth.engine.Engine;
import dev.berth.engine.EngineConfig;
import dev.berth.engine.OpenRequest;
import dev.berth.engine.OutputListener;
import dev.berth.engine.RunRequest;
import dev.berth.engine.RunResult;
import dev.berth.engine.Tenant;
import dev.berth.engine.spi.Resources;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/** Memory and process limits are enforced through cgroups where the host lets Berth write them (root here). */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class NamespaceLimitsTest {
    Path home;
    Engine engine;
    String ws;

    @BeforeAll
    void start() throws Exception {
        assumeTrue(HostIdentity.isRoot() && Files.isWritable(Path.of("/sys/fs/cgroup/pids")), "needs root and writable cgroups");
        home = Files.createTempDirectory("berth-limits-");
        engine = Engine.start(EngineConfig.defaults(home, List.of(new NamespaceDriver(home))));
        ws = engine.open(Tenant.LOCAL, new OpenRequest(null, "ephemeral", null, null, new Resources(1, 128, 1024, 48))).workspace().id();
    }

    @AfterAll
    void stop() throws Exception {
        if (engine != null) engine.close();
        if (home != null) dev.berth.engine.spi.Trees.delete(home);
    }

    @Test
    void forkBomb_stopsAtThePidsLimit() throws Exception {
        // python, because a shell exits (dash) or retries for a long time (bash) when fork fails
        String py = "import os, time\nn = 0\nfor i in range(200):\n    try:\n        pid = os.fork()\n"
                + "    except OSError:\n        break\n    if pid == 0:\n        time.sleep(2)\n        os._exit(0)\n    n += 1\n"
                + "print(n, flush=True)\nfor i in range(n):\n    os.wait()\n";
        RunResult r = engine.run(Tenant.LOCAL, new RunRequest(ws, "python3 -", null, java.util.Map.of(), 60, py, null), OutputListener.NONE);
        int processes = Integer.parseInt(r.stdout().strip());
        assertTrue(processes <= 48, processes + " forks despite a limit of 48");
        assertTrue(processes > 30, "the limit should allow work up to it, forked " + processes);
    }

    @Test
    void memoryHog_isKilledAtTheMemoryLimit() throws Exception {
        RunResult r = engine.run(Tenant.LOCAL, RunRequest.of(ws, "python3 -c 'b = bytearray(400 * 1024 * 1024); print(len(b))'"), OutputListener.NONE);
        assertEquals(137, r.exitCode(), "expected the OOM killer (SIGKILL): " + r);
        // the workspace itself survives its command being killed
        assertEquals("alive\n", engine.run(Tenant.LOCAL, RunRequest.of(ws, "echo alive"), OutputListener.NONE).stdout());
    }
}
