package dev.berth.engine.namespace;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.berth.engine.Engine;
import dev.berth.engine.EngineConfig;
import dev.berth.engine.OpenRequest;
import dev.berth.engine.OutputListener;
import dev.berth.engine.RunRequest;
import dev.berth.engine.RunResult;
import dev.berth.engine.Tenant;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Hostile code inside a namespace workspace tries to get out. Each case runs a real attempt inside a real bubblewrap
 * sandbox and checks that it fails for the reason the boundary gives.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class NamespaceEscapeTest {
    Path home;
    Path hostSecret;
    Engine engine;
    String ws;
    String other;
    ServerSocket hostService;

    @BeforeAll
    void start() throws Exception {
        home = Files.createTempDirectory("berth-escape-");
        hostSecret = Files.createTempFile("berth-host-secret-", ".txt");
        Files.writeString(hostSecret, "TOP-SECRET");
        hostService = new ServerSocket(0, 10, InetAddress.getLoopbackAddress());
        engine = Engine.start(EngineConfig.defaults(home, List.of(new NamespaceDriver(home))));
        ws = engine.open(Tenant.LOCAL, OpenRequest.ephemeral()).workspace().id();
        other = engine.open(Tenant.LOCAL, OpenRequest.persistent("neighbour")).workspace().id();
        engine.run(Tenant.LOCAL, RunRequest.of(other, "echo neighbour-data > /workspace/private.txt"), OutputListener.NONE);
    }

    @AfterAll
    void stop() throws IOException {
        engine.close();
        hostService.close();
        Files.deleteIfExists(hostSecret);
        dev.berth.engine.spi.Trees.delete(home);
    }

    RunResult sh(String cmd) throws Exception {
        return engine.run(Tenant.LOCAL, RunRequest.of(ws, cmd), OutputListener.NONE);
    }

    @Test
    void hostFile_outsideBinds_notVisible() throws Exception {
        RunResult r = sh("cat " + hostSecret + "; ls /tmp; cat /etc/shadow; ls /home /mnt /srv /opt /boot 2>&1; cat /root/.bash_history");
        assertFalse(r.stdout().contains("TOP-SECRET"), r.stdout());
        assertTrue(r.stderr().contains("No such file"), r.stderr());
    }

    /** bwrap is the sandbox's pid 1: its environ (readable from inside) must not be the server's environment. */
    @Test
    void serverEnvironment_notVisibleInAnySandboxProcess() throws Exception {
        RunResult r = sh("cat /proc/[0-9]*/environ | tr '\\0' '\\n' | sort -u");
        java.util.Set<String> inside = java.util.Set.of(r.stdout().split("\n"));
        java.util.List<String> leaked = System.getenv().entrySet().stream()
                .filter(e -> !java.util.Set.of("PATH", "HOME", "LANG", "TERM").contains(e.getKey()))
                .map(e -> e.getKey() + "=" + e.getValue()).filter(inside::contains).toList();
        assertTrue(leaked.isEmpty(), "server environment visible inside the sandbox: " + leaked);
        assertFalse(System.getenv().isEmpty());
    }

    @Test
    void hostProcesses_notVisible() throws Exception {
        RunResult r = sh("ls /proc | grep -c '^[0-9]'");
        int visible = Integer.parseInt(r.stdout().strip());
        assertTrue(visible < 10, "sandbox sees " + visible + " processes: " + sh("ps -ef").stdout());
        long hostPid = ProcessHandle.current().pid();
        assertNotEquals(0, sh("kill -0 " + hostPid).exitCode(), "host pid reachable by kill");
    }

    @Test
    void network_onlyLoopbackAndHostServicesUnreachable() throws Exception {
        RunResult ifaces = sh("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '");
        assertEquals("lo", ifaces.stdout().strip());
        RunResult connect = sh("exec 3<>/dev/tcp/127.0.0.1/" + hostService.getLocalPort() + " && echo CONNECTED");
        assertFalse(connect.stdout().contains("CONNECTED"), "reached a host loopback service: " + connect);
        assertNotEquals(0, sh("exec 3<>/dev/tcp/192.0.2.1/53").exitCode(), "raw TCP out must have no route");
        assertEquals("0", sh("tail -n +2 /proc/net/route | wc -l").stdout().strip(), "a route exists inside");
    }

    @Test
    void readOnlyBase_cannotBeWritten() throws Exception {
        for (String target : List.of("/usr/bin/berth-x", "/etc/passwd", "/etc/berth-x", "/bin/berth-x", "/run/berth-agent")) {
            RunResult r = sh("echo x > " + target);
            assertNotEquals(0, r.exitCode(), target + " was writable");
            assertTrue(r.stderr().contains("Read-only file system") || r.stderr().contains("Permission denied"), target + ": " + r.stderr());
        }
        // the writable layer is writable
        assertEquals(0, sh("echo ok > /usr/local/x && echo ok > /root/x && echo ok > /tmp/x && echo ok > /var/tmp/x").exitCode());
    }

    @Test
    void privilegedOperations_refused() throws Exception {
        assertNotEquals(0, sh("mount -t tmpfs none /mnt").exitCode(), "mount succeeded");
        assertNotEquals(0, sh("unshare -U true").exitCode(), "nested user namespace allowed");
        RunResult caps = sh("grep CapEff /proc/self/status");
        assertTrue(caps.stdout().contains("0000000000000000"), caps.stdout());
        assertNotEquals(0, sh("chroot / true").exitCode(), "chroot allowed");
    }

    @Test
    void otherWorkspace_filesUnreachable() throws Exception {
        RunResult r = sh("cat " + home + "/workspaces/" + other + "/state/workspace/private.txt; find / -name private.txt 2>/dev/null");
        assertFalse(r.stdout().contains("neighbour-data"), r.stdout());
    }

    @Test
    void sandboxProcesses_runAsUnprivilegedHostUid() throws Exception {
        if (!HostIdentity.isRoot()) return; // the uid drop applies when Berth itself is root
        int pid = Integer.parseInt(sh("echo $$; sleep 0").stdout().strip());
        // find the host view of any process of this workspace: children of bwrap under this JVM
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
        assertFalse(uids.isEmpty(), "no sandbox process found (pid inside was " + pid + ")");
        for (String u : uids) assertFalse(u.matches("Uid:\\s+0\\s.*"), "a sandbox runs as host root: " + u);
    }
}
