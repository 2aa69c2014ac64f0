package dev.berth.engine.agent;

import static dev.berth.engine.agent.AgentHarness.sh;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.berth.engine.Await;
import dev.berth.engine.agent.AgentHarness.Output;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Exec, files and sessions against the real agent binary, run as a plain child process. */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class AgentClientTest {
    private AgentHarness agent;
    private AgentClient client;

    @BeforeEach
    void start() throws Exception {
        agent = new AgentHarness();
        client = agent.accept();
    }

    @AfterEach
    void stop() throws Exception {
        if (client != null) client.close();
        agent.close();
    }

    private ExecExit run(ExecRequest req, Output out) throws Exception {
        return client.exec(req, out).exit().get(20, TimeUnit.SECONDS);
    }

    @Test
    void hello_handshake_announcesCapabilitiesAndAnswersPing() throws Exception {
        int caps = client.agentCapabilities();
        assertEquals(Protocol.CAP_EXEC | Protocol.CAP_FILES | Protocol.CAP_TUNNEL | Protocol.CAP_GUEST_OPS | Protocol.CAP_PORTS | Protocol.CAP_ATTACH
                | Protocol.CAP_TUNNEL_WINDOW | Protocol.CAP_TTY, caps, "caps 0x" + Integer.toHexString(caps));
        assertTrue(client.agentName().startsWith("berth-agent"), client.agentName());
        assertTrue(client.ping().compareTo(Duration.ofSeconds(5)) < 0);
        assertTrue(client.isOpen());
    }

    @Test
    void exec_echo_reportsStdoutAndExitCode() throws Exception {
        Output out = new Output();
        ExecExit exit = run(sh("echo hi; exit 3"), out);
        assertEquals(new ExecExit(3, 0, false), exit);
        assertEquals("hi\n", out.stdout());
    }

    @Test
    void exec_stdoutAndStderr_areSeparated() throws Exception {
        Output out = new Output();
        run(sh("echo out1; echo err1 >&2; echo out2; echo err2 >&2"), out);
        assertEquals("out1\nout2\n", out.stdout());
        assertEquals("err1\nerr2\n", out.stderr());
    }

    @Test
    void exec_20MegabytesOfOutput_arriveIntact() throws Exception {
        Output out = new Output();
        ExecExit exit = run(sh("yes abcdefghi | head -c 20000000"), out);
        assertEquals(0, exit.exitCode());
        byte[] got = out.stdoutBytes();
        assertEquals(20_000_000, got.length);
        byte[] unit = "abcdefghi\n".getBytes(StandardCharsets.US_ASCII);
        for (int i = 0; i < got.length; i++)
            if (got[i] != unit[i % unit.length]) throw new AssertionError("byte " + i + " is " + got[i] + ", expected " + unit[i % unit.length]);
    }

    @Test
    void exec_hostStalled_outputOfAnEndedRunIsNotCutByDrainGrace() throws Exception {
        // run A floods the queue and its listener stalls the reader for 1.5 s, so the agent stops reading pipes;
        // run B ends meanwhile. The drain grace must only count while pipes are read, or B's output is lost.
        Output b = new Output();
        ExecHandle hb = client.exec(sh("sleep 0.3; echo from-b"), b);
        Output a = new Output() {
            private boolean stalled;

            @Override
            public synchronized void onStdout(byte[] data) {
                super.onStdout(data);
                if (stalled) return;
                stalled = true;
                try {
                    Thread.sleep(1500); // a listener that stalls on purpose: the other run's output must not wait for it
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        };
        ExecHandle ha = client.exec(sh("head -c 4000000 /dev/zero"), a);
        assertEquals(0, hb.exit().get(20, TimeUnit.SECONDS).exitCode());
        assertEquals("from-b\n", b.stdout());
        assertEquals(0, ha.exit().get(20, TimeUnit.SECONDS).exitCode());
        assertEquals(4_000_000, a.stdoutBytes().length);
    }

    @Test
    void exec_stdinPiped_isPassedThroughAndClosed() throws Exception {
        Output out = new Output();
        byte[] data = new byte[3 << 20];
        new Random(7).nextBytes(data);
        ExecHandle h = client.exec(new ExecRequest(List.of("sha256sum"), List.of("PATH=/usr/bin:/bin"), "/", 0, true), out);
        h.writeStdin(data);
        h.closeStdin();
        assertEquals(0, h.exit().get(20, TimeUnit.SECONDS).exitCode(), out.stderr());
        assertEquals(hex(MessageDigest.getInstance("SHA-256").digest(data)) + "  -\n", out.stdout());
    }

    @Test
    void exec_20MegabytesThroughCat_stdinAndStdoutStreamWithoutLoss() throws Exception {
        byte[] data = new byte[20_000_000];
        new Random(11).nextBytes(data);
        Output out = new Output();
        ExecHandle h = client.exec(new ExecRequest(List.of("cat"), List.of("PATH=/usr/bin:/bin"), "/", 0, true), out);
        // more than the agent buffers for one run: this only passes if STDIN applies back-pressure instead of dropping
        h.writeStdin(data);
        h.closeStdin();
        assertEquals(0, h.exit().get(20, TimeUnit.SECONDS).exitCode(), out.stderr());
        assertArrayEquals(MessageDigest.getInstance("SHA-256").digest(data), MessageDigest.getInstance("SHA-256").digest(out.stdoutBytes()));
    }

    @Test
    void exec_childNeverReadsStdin_sessionStaysResponsive() throws Exception {
        ExecHandle h = client.exec(new ExecRequest(List.of("sleep", "30"), List.of("PATH=/usr/bin:/bin"), "/", 0, true), new Output());
        Thread writer = Thread.ofVirtual().start(() -> {
            try {
                h.writeStdin(new byte[4 << 20]);
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        });
        writer.join(10_000);
        assertFalse(writer.isAlive(), "host writes must not block forever on a child that never reads");
        assertTrue(client.ping().compareTo(Duration.ofSeconds(5)) < 0);
        h.signal(9);
        assertEquals(9, h.exit().get(30, TimeUnit.SECONDS).termSignal());
    }

    @Test
    void exec_withoutStdinFlag_readsDevNull() throws Exception {
        Output out = new Output();
        ExecHandle h = client.exec(sh("cat; echo done"), out);
        assertThrows(IllegalStateException.class, () -> h.writeStdin(new byte[] {1}));
        assertEquals(0, h.exit().get(30, TimeUnit.SECONDS).exitCode());
        assertEquals("done\n", out.stdout());
    }

    @Test
    void exec_missingCwd_failsWithErrno2AndPath() {
        AgentException e = assertThrows(AgentException.class,
                () -> client.exec(new ExecRequest(List.of("true"), List.of(), "/nope/missing", 0, false), new Output()));
        assertEquals(2, e.errno(), e.getMessage());
        assertTrue(e.getMessage().contains("/nope/missing"), e.getMessage());
    }

    @Test
    void exec_missingBinary_exits127WithReasonOnStderr() throws Exception {
        Output out = new Output();
        ExecExit exit = run(new ExecRequest(List.of("/no/such/binary"), List.of(), "/", 0, false), out);
        assertEquals(127, exit.exitCode());
        assertTrue(out.stderr().contains("/no/such/binary"), out.stderr());
    }

    @Test
    void exec_environment_isExactlyTheRequestPlusMarker() throws Exception {
        Output out = new Output();
        run(new ExecRequest(List.of("/usr/bin/env"), List.of("A=1", "B=two words"), "/tmp", 0, false), out);
        List<String> lines = List.of(out.stdout().split("\n"));
        assertEquals(3, lines.size(), out.stdout());
        assertEquals("A=1", lines.get(0));
        assertEquals("B=two words", lines.get(1));
        assertTrue(lines.get(2).matches("BERTH_RUN=[0-9a-f]{8}-[0-9]+"), lines.get(2));
    }

    @Test
    void exec_timeout_killsWholeTreeIncludingSetsidDaemon() throws Exception {
        Path pidFile = agent.dir.resolve("daemon.pid");
        // the subshell forks a setsid'ed shell and exits, so the daemon is reparented: only the marker finds it
        String script = "(setsid sh -c 'sleep 1000 & echo $! > " + pidFile + "; wait' &); sleep 1000";
        Output out = new Output();
        ExecHandle h = client.exec(new ExecRequest(List.of("/bin/sh", "-c", script), List.of("PATH=/usr/bin:/bin"), "/", 1000, false), out);
        long daemon = awaitPidFile(pidFile);
        assertTrue(AgentHarness.alive(daemon));
        ExecExit exit = h.exit().get(30, TimeUnit.SECONDS);
        assertEquals(new ExecExit(-1, 9, true), exit);
        AgentHarness.awaitDead(daemon, Duration.ofSeconds(3));
    }

    @Test
    void signal_sigterm_killsWholeTree() throws Exception {
        Output out = new Output();
        ExecHandle h = client.exec(sh("sleep 1000 & echo $!; wait"), out);
        long child = awaitPidLine(out);
        h.signal(15);
        ExecExit exit = h.exit().get(30, TimeUnit.SECONDS);
        assertEquals(15, exit.termSignal(), exit.toString());
        assertFalse(exit.timedOut());
        AgentHarness.awaitDead(child, Duration.ofSeconds(3));
        AgentHarness.awaitDead(h.pid(), Duration.ofSeconds(3));
    }

    @Test
    void exec_backgroundProcessHoldsStdout_exitArrivesAfterDrainGrace() throws Exception {
        Output out = new Output();
        long t0 = System.nanoTime();
        ExecExit exit = run(sh("sleep 20 & echo $!"), out);
        long ms = (System.nanoTime() - t0) / 1_000_000;
        assertEquals(0, exit.exitCode());
        assertTrue(ms < 2000, "EXIT took " + ms + " ms although the drain grace is 100 ms");
        long bg = Long.parseLong(out.stdout().trim());
        assertTrue(AgentHarness.alive(bg), "background process must keep running");
        ProcessHandle.of(bg).ifPresent(ProcessHandle::destroyForcibly);
    }

    @Test
    void exec_eightConcurrentRuns_outputsDoNotMix() throws Exception {
        List<ExecHandle> handles = new ArrayList<>();
        List<Output> outs = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            Output o = new Output();
            outs.add(o);
            handles.add(client.exec(sh("i=0; while [ $i -lt 3000 ]; do echo run" + i + "-$i; i=$((i+1)); done; echo err" + i + " >&2; exit " + i), o));
        }
        for (int i = 0; i < 8; i++) {
            assertEquals(i, handles.get(i).exit().get(20, TimeUnit.SECONDS).exitCode());
            StringBuilder want = new StringBuilder();
            for (int j = 0; j < 3000; j++) want.append("run").append(i).append('-').append(j).append('\n');
            assertEquals(want.toString(), outs.get(i).stdout(), "stdout of run " + i);
            assertEquals("err" + i + "\n", outs.get(i).stderr());
        }
    }

    @Test
    void exec_thousandRuns_leakNoDescriptors() throws Exception {
        Path fds = Path.of("/proc/" + agent.process.pid() + "/fd");
        run(sh("true"), new Output());
        long before;
        try (var s = Files.list(fds)) { before = s.count(); }
        for (int i = 0; i < 1000; i++) {
            ExecRequest req = new ExecRequest(List.of("/bin/true"), List.of(), "/", 0, i % 2 == 0);
            assertEquals(0, client.exec(req, new Output()).exit().get(30, TimeUnit.SECONDS).exitCode());
        }
        long after;
        try (var s = Files.list(fds)) { after = s.count(); }
        assertEquals(before, after, "agent fds before/after 1000 runs");
    }

    @Test
    void files_binaryWriteReadList_roundTrip() throws Exception {
        byte[] data = new byte[256];
        for (int i = 0; i < 256; i++) data[i] = (byte) i;
        String dir = agent.dir + "/files/sub";
        assertEquals(256, client.writeFile(dir + "/bin", 0640, Protocol.WRITE_TRUNCATE | Protocol.WRITE_MKDIRS, data));
        FileChunk c = client.readFile(dir + "/bin", 0, 1000);
        assertArrayEquals(data, c.data());
        assertEquals(256, c.fileSize());
        assertEquals(0640, c.mode());
        FileChunk mid = client.readFile(dir + "/bin", 250, 100);
        assertArrayEquals(Arrays.copyOfRange(data, 250, 256), mid.data());
        client.writeFile(dir + "/bin", 0, Protocol.WRITE_APPEND, new byte[] {1, 2});
        client.writeFile(dir + "/bin", 0, 0, new byte[] {9});
        byte[] now = Files.readAllBytes(Path.of(dir, "bin"));
        assertEquals(258, now.length);
        assertEquals(9, now[0]);
        assertEquals(2, now[257]);
        Files.createDirectory(Path.of(dir, "d"));
        Files.createSymbolicLink(Path.of(dir, "l"), Path.of("bin"));
        List<FileEntry> entries = new ArrayList<>(client.listFiles(dir));
        entries.sort((a, b) -> a.name().compareTo(b.name()));
        assertEquals(3, entries.size(), entries.toString());
        assertEquals("bin", entries.get(0).name());
        assertEquals('f', entries.get(0).kind());
        assertEquals(258, entries.get(0).size());
        assertEquals(0640, entries.get(0).mode());
        assertEquals('d', entries.get(1).kind());
        assertEquals('l', entries.get(2).kind());
        assertTrue(Math.abs(entries.get(0).mtimeSeconds() - System.currentTimeMillis() / 1000) < 60);
    }

    @Test
    void files_largeFile_roundTripsInChunks() throws Exception {
        byte[] data = new byte[(3 << 20) + 12345];
        new Random(3).nextBytes(data);
        String path = agent.dir + "/big/file.bin";
        assertEquals(data.length, client.writeWholeFile(path, 0600, data));
        assertArrayEquals(data, Files.readAllBytes(Path.of(path)));
        assertArrayEquals(data, client.readWholeFile(path, 8 << 20));
        AgentException e = assertThrows(AgentException.class, () -> client.readWholeFile(path, 1 << 20));
        assertEquals(27, e.errno());
    }

    @Test
    void files_errors_carryErrnoAndPath() throws Exception {
        AgentException missing = assertThrows(AgentException.class, () -> client.readFile("/nope/file", 0, 10));
        assertEquals(2, missing.errno());
        assertTrue(missing.getMessage().contains("/nope/file"), missing.getMessage());
        AgentException dir = assertThrows(AgentException.class, () -> client.readFile(agent.dir.toString(), 0, 10));
        assertEquals(21, dir.errno(), dir.getMessage());
        AgentException list = assertThrows(AgentException.class, () -> client.listFiles("/nope/dir"));
        assertEquals(2, list.errno());
        AgentException noCreate = assertThrows(AgentException.class, () -> client.writeFile(agent.dir + "/absent", 0644, 0, new byte[1]));
        assertEquals(2, noCreate.errno());
        AgentException bothFlags = assertThrows(AgentException.class,
                () -> client.writeFile(agent.dir + "/x", 0644, Protocol.WRITE_APPEND | Protocol.WRITE_TRUNCATE, new byte[1]));
        assertEquals(22, bothFlags.errno());
        assertTrue(client.isOpen(), "errors must not end the session");
    }

    @Test
    void guestOps_syncAndSeed_succeed() throws Exception {
        client.sync();
        client.seedRngCredited(new byte[64]); // credited or not depends on privileges; it must answer OK either way
        // CLOCK_SET is not exercised: unsandboxed it would set the test machine's clock
    }

    static long awaitPidFile(Path file) throws Exception {
        Await.until("a pid is in " + file, Duration.ofSeconds(5), () -> Files.exists(file) && !Files.readString(file).isBlank());
        return Long.parseLong(Files.readString(file).trim());
    }

    static long awaitPidLine(Output out) throws Exception {
        if (!Await.within(Duration.ofSeconds(5), () -> out.stdout().endsWith("\n"))) {
            throw new AssertionError("no pid on stdout: '" + out.stdout() + "'");
        }
        return Long.parseLong(out.stdout().trim());
    }

    static String hex(byte[] b) {
        StringBuilder sb = new StringBuilder();
        for (byte x : b) sb.append(String.format("%02x", x));
        return sb.toString();
    }
}
