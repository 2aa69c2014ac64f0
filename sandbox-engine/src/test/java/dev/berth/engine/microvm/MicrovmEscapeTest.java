package dev.berth.engine.microvm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.berth.engine.AbstractEscapeTest;
import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.OpenRequest;
import dev.berth.engine.api.RunResult;
import dev.berth.engine.api.Tenant;
import dev.berth.engine.spi.IsolationDriver;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The shared escape and exhaustion cases inside a microVM (test image: Debian cloud kernel + busybox), from the
 * inside: runs are confined below the guest agent like on the other levels (own pid and mount namespace, no
 * capabilities, seccomp) and share the cgroup v2 group {@code berth-runs} with the pids and memory limits, which the
 * agent is outside of. The image has no python3, so the cases that make raw system calls use {@code escape-probe}
 * ({@code src/test/c}), built static on the host and copied in.
 */
class MicrovmEscapeTest extends AbstractEscapeTest {

    @Override
    protected IsolationDriver driver(Path home) {
        return new MicrovmDriver(TestImages.builder(), MicrovmDriver.ImageKind.TEST);
    }

    /**
     * The test image is busybox (its setpriv has no --reuid, it has no adduser) with a writable /etc: the user is
     * added as useradd would (passwd and group entries), then su runs the script as it.
     */
    @Override
    protected String asUser1000(String script) {
        return "{ grep -q '^u1000:' /etc/passwd || { echo 'u1000:x:1000:1000::/tmp:/bin/sh' >> /etc/passwd"
                + " && echo 'g1000:x:1000:' >> /etc/group; }; } && su u1000 -s /bin/sh -c '" + script + "'";
    }

    // ---------------------------------------------------------------- cases the shared class does with python3

    @Test
    @Override
    protected void ptrace_ofPid1_refusedOrWorthless() throws Exception {
        RunResult r = probe(ws, "ptrace 1; grep CapEff /proc/1/status", 20);
        assertTrue(r.stdout().contains("Operation not permitted"), "a run attached to its init: " + r);
    }

    @Test
    @Override
    protected void seccompFilter_installedForRuns() throws Exception {
        RunResult r = sh("grep -E '^(Seccomp|NoNewPrivs):' /proc/self/status");
        assertTrue(r.stdout().contains("Seccomp:\t2"), r.stdout());
        assertTrue(r.stdout().contains("NoNewPrivs:\t0"), r.stdout()); // setuid binaries work (issue 32)
        RunResult s = probe(ws, "syscalls", 30);
        List<String> lines = s.stdout().strip().lines().toList();
        assertEquals(4, lines.size(), s.toString());
        for (String line : lines) assertTrue(line.endsWith("-1 Operation not permitted"), s.stdout());
    }

    @Test
    @Override
    protected void memoryBalloon_killedAtTheLimit_workspaceSurvives() throws Exception {
        assumeEnforced("memory");
        long killedBefore = events("memory.events", "oom_kill");
        RunResult r = probe(ws, "alloc 600", 60);
        assertNotEquals(0, r.exitCode(), "600 MiB allocated in a 256 MiB guest: " + r);
        String events = sh("cat /sys/fs/cgroup/berth-runs/memory.events").stdout().replace('\n', ' ');
        System.out.printf("[microvm] memory balloon of 600 MiB in a 256 MiB guest (runs' memory.max %d MiB): exit %d, signal %s; %s%n",
                Integer.parseInt(sh("cat /sys/fs/cgroup/berth-runs/memory.max").stdout().strip()) >> 20, r.exitCode(), r.signal(), events);
        // the OOM killer took a process of the runs' group (not the agent, which is outside it)
        assertTrue(events("memory.events", "oom_kill") > killedBefore, events);
        assertEquals("alive\n", run(ws, "echo alive", 20).stdout(), "the agent answers after the balloon");
    }

    /** No bash in the test image: the attempt goes through busybox nc. The guest has no network device at all. */
    @Test
    @Override
    protected void hostLoopbackServices_unreachable() throws Exception {
        assertEquals("lo", sh("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '").stdout().strip());
        RunResult connect = sh("echo x | nc -w 2 127.0.0.1 " + hostService.getLocalPort() + " && echo CONNECTED");
        assertFalse(connect.stdout().contains("CONNECTED"), "reached a host loopback service: " + connect);
        assertNotEquals(0, sh("echo x | nc -w 2 192.0.2.1 53").exitCode(), "raw TCP out must have no route");
    }

    // ---------------------------------------------------------------- particular to the guest

    /** A run is the guest's uid 0 without capabilities: it owns root's 0644 cgroup files, so they must be read-only. */
    @Test
    void runs_inTheirCgroup_cannotLeaveOrRaiseIt() throws Exception {
        assertEquals("0::/berth-runs", sh("cat /proc/self/cgroup").stdout().strip());
        assertEquals(String.valueOf(LIMITS.maxPids()), sh("cat /sys/fs/cgroup/berth-runs/pids.max").stdout().strip());
        for (String attempt : List.of("echo $$ > /sys/fs/cgroup/cgroup.procs", "echo max > /sys/fs/cgroup/berth-runs/pids.max",
                "echo max > /sys/fs/cgroup/berth-runs/memory.max", "mkdir /sys/fs/cgroup/escape", "echo 1 > /sys/kernel/mm/ksm/run")) {
            RunResult r = sh(attempt);
            assertNotEquals(0, r.exitCode(), attempt + " succeeded");
            assertTrue(r.stderr().contains("Read-only file system"), attempt + ": " + r.stderr());
        }
        assertEquals("0::/berth-runs", sh("cat /proc/self/cgroup").stdout().strip());
    }

    /** The agent's virtio-serial port is the one way to the host: a run cannot open it (or any raw device that matters). */
    @Test
    void agentPort_cannotBeOpenedByARun() throws Exception {
        RunResult r = sh("for p in /sys/class/virtio-ports/*; do d=/dev/${p##*/}; echo \"$(cat $p/name) $d\";"
                + " [ -c $d ] && (exec 3<>$d) && echo OPENED $d; done; [ -c /dev/mem ] && (exec 3</dev/mem) && echo OPENED mem");
        assertTrue(r.stdout().contains("berth.agent /dev/"), "no agent port found: " + r);
        assertFalse(r.stdout().contains("OPENED"), "a run opened the agent's port or /dev/mem: " + r);
        // root in a run (issue 32) finds no node of the port in its /dev, and cannot make one (no CAP_MKNOD)
        RunResult node = sh("ls /dev; for p in /sys/class/virtio-ports/*; do IFS=: read ma mi < $p/dev;"
                + " mknod /tmp/port c $ma $mi && echo MADE; [ -c /tmp/port ] && (exec 3<>/tmp/port) && echo OPENED; done");
        assertFalse(node.stdout().contains("vport"), "the agent's port is in a run's /dev: " + node);
        assertFalse(node.stdout().contains("MADE") || node.stdout().contains("OPENED"), "a run made or opened the port: " + node);
        assertTrue(node.stdout().contains("null"), node.toString());
    }

    /** The bomb meets pids.max of the runs' group (pids.events counts it) while the agent, outside it, keeps serving. */
    @Test
    void forkBomb_hitsTheGuestPidsLimit_agentKeepsServing() throws Exception {
        assumeEnforced("pids");
        long before = events("pids.events", "max");
        RunResult r = run(ws, "bomb() { bomb | bomb & }; bomb; sleep 3", 10);
        long t0 = System.nanoTime();
        assertEquals("alive\n", run(ws, "echo alive", 20).stdout());
        long ms = (System.nanoTime() - t0) / 1_000_000;
        long after = events("pids.events", "max");
        System.out.printf("[microvm] fork bomb in the guest (pids.max %d): pids.events max %d -> %d, next run answered in %d ms; %s%n",
                LIMITS.maxPids(), before, after, ms, r.timedOut() ? "timed out" : "exit " + r.exitCode());
        assertTrue(after > before, "the bomb never met pids.max: " + before + " -> " + after);
        // what is left in the group is this run alone (its init, sh, cat): the bomb ended with its run
        int left = Integer.parseInt(sh("cat /sys/fs/cgroup/berth-runs/pids.current").stdout().strip());
        assertTrue(left <= 4, left + " processes in the runs' group: the bomb's processes outlived their run");
    }

    private long events(String file, String key) throws EngineException {
        String s = sh("cat /sys/fs/cgroup/berth-runs/" + file).stdout();
        return s.lines().filter(l -> l.startsWith(key + " ")).mapToLong(l -> Long.parseLong(l.substring(key.length() + 1).strip()))
                .findFirst().orElseThrow(() -> new AssertionError("no '" + key + "' in " + file + ": " + s));
    }

    /** A fresh workspace from the warm base gets its own pids.max, not the base's (the host sets it after start). */
    @Test
    void pidsLimit_isTheWorkspacesOwn() throws Exception {
        String big = engine.open(Tenant.LOCAL, new OpenRequest(null, "ephemeral", null, null,
                new dev.berth.engine.spi.Resources(1, 256, 64, 200))).workspace().id();
        try {
            assertEquals("200", run(big, "cat /sys/fs/cgroup/berth-runs/pids.max", 20).stdout().strip());
        } finally {
            engine.closeWorkspace(Tenant.LOCAL, big, true);
        }
    }
}
