package dev.berth.engine.agent;

import static dev.berth.engine.agent.AgentHarness.sh;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.berth.engine.Await;
import dev.berth.engine.agent.AgentHarness.Output;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * ATTACH (protocol "Re-attaching a run") against the real agent: a run outlives its host connection, the agent keeps
 * its newest output and its exit while no host is attached, and a later connection takes it over by name.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class AgentAttachTest {
    private AgentHarness agent;

    @BeforeEach
    void start() throws Exception { agent = new AgentHarness(); }

    @AfterEach
    void stop() throws Exception { agent.close(); }

    private Path file(String name) { return agent.dir.resolve(name); }

    private static void await(Path p) throws Exception {
        Await.until(p + " appears", Duration.ofSeconds(20), () -> Files.exists(p));
    }

    private static void awaitOutput(Output o, String text) throws Exception {
        if (!Await.within(Duration.ofSeconds(20), () -> o.stdout().contains(text))) {
            throw new AssertionError("never saw '" + text + "' in: " + o.stdout());
        }
    }

    @Test
    void attach_afterReconnect_deliversOutputOfTheDetachedTimeThenStreamsOnAndReportsTheExit() throws Exception {
        String gate1 = file("gate1").toString(), mark = file("mark").toString(), gate2 = file("gate2").toString();
        AgentClient first = agent.accept();
        Output o1 = new Output();
        ExecHandle h1 = first.exec(sh("echo before; while [ ! -e " + gate1 + " ]; do sleep 0.02; done; echo while-detached;"
                + " echo err-detached >&2; touch " + mark + "; while [ ! -e " + gate2 + " ]; do sleep 0.02; done; echo live; exit 7"), o1);
        String run = h1.run();
        assertNotNull(run, "a version-3 agent names every run");
        assertTrue(run.endsWith("-" + h1.channel()), run);
        awaitOutput(o1, "before");
        first.close();

        Files.createFile(file("gate1"));
        await(Path.of(mark)); // the run wrote while no host was attached
        try (AgentClient second = agent.accept()) {
            assertTrue(second.supportsAttach());
            Output o2 = new Output();
            ExecHandle h2 = second.attach(run, o2);
            assertEquals(h1.pid(), h2.pid(), "the same process");
            assertEquals(0, h2.droppedWhileDetached());
            assertEquals(run, h2.run());
            Files.createFile(Path.of(gate2));
            ExecExit x = h2.exit().get(20, TimeUnit.SECONDS);
            assertEquals(7, x.exitCode());
            assertEquals("while-detached\nlive\n", o2.stdout(), "kept output first, then the live output");
            assertEquals("err-detached\n", o2.stderr());
            assertEquals("before\n", o1.stdout(), "nothing delivered twice");
        }
    }

    @Test
    void attach_toARunThatEndedWhileDetached_getsItsOutputAndExit() throws Exception {
        String gate = file("gate").toString();
        AgentClient first = agent.accept();
        Output o1 = new Output();
        ExecHandle h1 = first.exec(sh("echo started; while [ ! -e " + gate + " ]; do sleep 0.02; done; echo gone >&2; exit 3"), o1);
        awaitOutput(o1, "started");
        String run = h1.run();
        int pid = h1.pid();
        first.close();
        Files.createFile(Path.of(gate));
        AgentHarness.awaitDead(pid, Duration.ofSeconds(20));
        try (AgentClient second = agent.accept()) {
            Output o2 = new Output();
            ExecHandle h2 = second.attach(run, o2);
            ExecExit x = h2.exit().get(20, TimeUnit.SECONDS);
            assertEquals(3, x.exitCode());
            assertEquals("gone\n", o2.stderr());
            // collected once: the agent forgets it
            AgentException e = assertThrows(AgentException.class, () -> second.attach(run, new Output()));
            assertEquals(2, e.errno(), e.getMessage());
        }
    }

    @Test
    void attach_afterMoreOutputThanTheAgentKeeps_newestKeptAndTheRestCountedAsDropped() throws Exception {
        String gate = file("gate").toString(), mark = file("mark").toString();
        AgentClient first = agent.accept();
        Output o1 = new Output();
        // 1 MiB of lines, then a last line, all while detached; then it waits so the exit comes live
        ExecHandle h1 = first.exec(sh("echo ready; while [ ! -e " + gate + " ]; do sleep 0.02; done;"
                + " i=0; while [ $i -lt 16384 ]; do echo 0123456789012345678901234567890123456789012345678901234567890; i=$((i+1)); done;"
                + " echo last-line; touch " + mark + "; sleep 30"), o1);
        awaitOutput(o1, "ready");
        String run = h1.run();
        first.close();
        Files.createFile(Path.of(gate));
        await(Path.of(mark));
        try (AgentClient second = agent.accept()) {
            Output o2 = new Output();
            ExecHandle h2 = second.attach(run, o2);
            long total = 16384L * 62 + "last-line\n".length();
            Await.within(Duration.ofSeconds(20), () -> o2.stdoutBytes().length + h2.droppedWhileDetached() >= total);
            byte[] got = o2.stdoutBytes();
            assertTrue(h2.droppedWhileDetached() > 0, "1 MiB cannot all be kept");
            assertTrue(got.length <= Protocol.DETACHED_KEEP, got.length + " bytes kept");
            assertEquals(total, got.length + h2.droppedWhileDetached(), "every byte is either delivered or counted as dropped");
            assertTrue(new String(got, StandardCharsets.UTF_8).endsWith("0123456789012345678901234567890123456789012345678901234567890\nlast-line\n"),
                    "the newest output is kept, cut only at a chunk boundary");
            h2.signal(9);
            assertEquals(9, h2.exit().get(20, TimeUnit.SECONDS).termSignal(), "signals reach a re-attached run");
        }
    }

    @Test
    void attach_unknownOrAlreadyAttachedRun_refusedWithErrno() throws Exception {
        try (AgentClient c = agent.accept()) {
            AgentException unknown = assertThrows(AgentException.class, () -> c.attach("ffffffff-1", new Output()));
            assertEquals(2, unknown.errno(), unknown.getMessage());
            ExecHandle h = c.exec(sh("exec sleep 30"), new Output());
            AgentException busy = assertThrows(AgentException.class, () -> c.attach(h.run(), new Output()));
            assertEquals(16, busy.errno(), busy.getMessage());
            h.signal(9);
            h.exit().get(20, TimeUnit.SECONDS);
            c.ping(); // the session is intact after both refusals
        }
    }

    @Test
    void attach_malformedPayload_endsTheSessionNotTheAgentOrTheRun() throws Exception {
        AgentClient first = agent.accept();
        ExecHandle h = first.exec(sh("exec sleep 30"), new Output());
        String run = h.run();
        int pid = h.pid();
        first.close();
        try (FrameChannel raw = agent.acceptRaw()) {
            raw.write(Protocol.HELLO, 0, new PayloadWriter().u16(Protocol.VERSION).u32(0).str("raw").toBytes());
            Frame hello = raw.read();
            PayloadReader r = new PayloadReader(hello);
            assertEquals(Protocol.VERSION, r.u16());
            assertTrue((r.u32() & Protocol.CAP_ATTACH) != 0);
            r.str();
            assertEquals(8, r.str().length(), "the session tag");
            r.end();
            raw.write(Protocol.ATTACH, 1, new byte[] {0, 0, 0, 9, 'x'}); // str claims 9 bytes, has 1
            assertThrows(Exception.class, raw::read, "the agent ends the session on a malformed ATTACH");
        }
        try (AgentClient third = agent.accept()) {
            ExecHandle again = third.attach(run, new Output());
            assertEquals(pid, again.pid(), "the run was not touched by the broken session");
            again.signal(9);
            again.exit().get(20, TimeUnit.SECONDS);
        }
    }
}
