package dev.berth.engine.gvisor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.berth.engine.Engine;
import dev.berth.engine.api.EngineConfig;
import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.OpenRequest;
import dev.berth.engine.api.OutputListener;
import dev.berth.engine.api.RunRequest;
import dev.berth.engine.api.RunResult;
import dev.berth.engine.api.Tenant;
import dev.berth.engine.host.BaseEtc;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Root inside a gVisor workspace adds a user and becomes it (issue 32): the workspace's /etc and /home are its own
 * writable directories (WritableRoot), kept across park; the built-in /etc shared by every workspace is never written.
 */
class GvisorRootTest {
    Path home;
    Engine engine;

    @BeforeEach
    void start() throws Exception {
        home = Files.createTempDirectory("berth-gvroot-");
        Files.setPosixFilePermissions(home, java.nio.file.attribute.PosixFilePermissions.fromString("rwxr-xr-x"));
        GvisorDriver d = new GvisorDriver(home);
        assumeTrue(d.probe().available(), () -> "gVisor cannot run here: " + d.probe().reason());
        engine = Engine.start(EngineConfig.defaults(home, List.of(d)));
    }

    @AfterEach
    void stop() throws Exception {
        if (engine != null) engine.close();
        if (home != null) dev.berth.engine.spi.Trees.delete(home);
    }

    String sh(String ws, String cmd) throws EngineException {
        RunResult r = engine.run(Tenant.LOCAL, RunRequest.of(ws, cmd), OutputListener.NONE);
        assertEquals(0, r.exitCode(), cmd + ": " + r);
        return r.stdout();
    }

    // GNU stat and ls fail on this runsc (EINVAL, GvisorDriver's known limits): find reads the owners
    @Test
    void useradd_thenSu_keptAcrossPark() throws Exception {
        engine.open(Tenant.LOCAL, OpenRequest.persistent("g"));
        assertEquals("uid=1000(bob) gid=1000(bob) groups=1000(bob)\nbob /home/bob\nbob:bob\n", sh("g",
                "useradd -m -s /bin/sh bob && su bob -c 'id; echo $(whoami) $HOME; touch ~/mine' && find /home/bob/mine -printf '%u:%g\\n'"));
        // root hands a file to the user, and the user's own writes stay the user's
        // a system user as a package's maintainer script adds it (adduser locks /run/adduser)
        assertEquals("svc\n", sh("g", "adduser --system --group --no-create-home svc >/dev/null 2>&1; id -un svc"));
        assertEquals("bob\n", sh("g", "touch /workspace/f && chown bob /workspace/f && su bob -c 'echo x >> /workspace/f' && find /workspace/f -printf '%u\\n'"));
        assertTrue(!Files.readString(BaseEtc.prepare(home.resolve("images")).resolve("passwd")).contains("bob"),
                "the shared built-in /etc was written");
        engine.park(Tenant.LOCAL, "g");
        assertEquals("uid=1000(bob)\n", sh("g", "su bob -c id | cut -d' ' -f1"), "after park and resume");
    }
}
