package dev.berth.engine.namespace;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.berth.engine.AbstractEscapeTest;
import dev.berth.engine.api.RunResult;
import dev.berth.engine.host.HostIdentity;
import dev.berth.engine.spi.IsolationDriver;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The shared escape and exhaustion cases on bubblewrap, plus what is particular to it (host uids, read-only base). */
class NamespaceEscapeTest extends AbstractEscapeTest {

    /** The sandbox runs with no_new_privs (set by the launcher on the host) and bubblewrap's mounts are nosuid. */
    @Override
    protected boolean setuidBinariesWork() { return false; }

    @Override
    protected IsolationDriver driver(Path home) {
        return new NamespaceDriver(home);
    }

    @Test
    void readOnlyBase_cannotBeWritten() throws Exception {
        for (String target : List.of("/usr/bin/berth-x", "/bin/berth-x")) {
            RunResult r = sh("echo x > " + target);
            assertTrue(r.exitCode() != 0, target + " was writable");
            assertTrue(r.stderr().contains("Read-only file system") || r.stderr().contains("Permission denied"), target + ": " + r.stderr());
        }
        // /etc is the workspace's own copy (issue 32: useradd writes it): the built-in /etc every workspace is seeded
        // from is never written
        Path base = dev.berth.engine.host.BaseEtc.prepare(home.resolve("images"));
        String passwd = java.nio.file.Files.readString(base.resolve("passwd"));
        assertTrue(sh("echo 'planted:x:4242:4242::/:/bin/sh' >> /etc/passwd && echo x > /etc/berth-x").exitCode() == 0);
        assertEquals(passwd, java.nio.file.Files.readString(base.resolve("passwd")), "the built-in /etc was written");
        assertTrue(!java.nio.file.Files.exists(base.resolve("berth-x")), "the built-in /etc was written");
        // the writable layer is writable
        RunResult w = sh("echo ok > /usr/local/x && echo ok > /root/x && echo ok > /tmp/x && echo ok > /var/tmp/x");
        assertTrue(w.exitCode() == 0, w.toString());
    }

    @Test
    void sandboxProcesses_runAsUnprivilegedHostUid() throws Exception {
        if (!HostIdentity.isRoot()) return; // the uid drop applies when Berth itself is root
        var uids = ProcessHandle.current().descendants()
                .filter(p -> p.info().command().orElse("").contains("bwrap"))
                .map(p -> {
                    try {
                        return Files.readString(Path.of("/proc/" + p.pid() + "/status")).lines()
                                .filter(l -> l.startsWith("Uid:")).findFirst().orElse("");
                    } catch (IOException e) {
                        return "";
                    }
                }).toList();
        assertFalse(uids.isEmpty(), "no sandbox process found");
        for (String u : uids) assertFalse(u.matches("Uid:\\s+0\\s.*"), "a sandbox runs as host root: " + u);
    }
}
