package dev.berth.engine.agent;

import static dev.berth.engine.agent.AgentHarness.sh;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.berth.engine.agent.AgentHarness.Output;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Session lifecycle: host reconnects and host protocol errors end a session, never the agent or its runs. */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class AgentSessionTest {
    private AgentHarness agent;

    @BeforeEach
    void start() throws Exception { agent = new AgentHarness(); }

    @AfterEach
    void stop() throws Exception { agent.close(); }

    @Test
    void reconnect_afterHostClose_newHelloWorksAndOldRunKeepsRunning() throws Exception {
        AgentClient first = agent.accept();
        Output out = new Output();
        ExecHandle sleeper = first.exec(sh("exec sleep 30"), out);
        int pid = sleeper.pid();
        first.close();
        assertThrows(java.util.concurrent.ExecutionException.class, () -> sleeper.exit().get(30, TimeUnit.SECONDS),
                "exit of a run on a closed client fails (it does not hang)");

        try (AgentClient second = agent.accept()) {
            second.ping();
            assertTrue(AgentHarness.alive(pid), "run of the old session must survive the reconnect");
            Output o2 = new Output();
            assertEquals(0, second.exec(sh("echo again"), o2).exit().get(30, TimeUnit.SECONDS).exitCode());
            assertEquals("again\n", o2.stdout());
        } finally {
            ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
        }
    }

    @Test
    void malformedFrame_oversizedLen_agentDropsSessionAndAcceptsANewOne() throws Exception {
        AgentClient first = agent.accept();
        ExecHandle pending = first.exec(sh("exec sleep 30"), new Output());
        int pid = pending.pid();
        // len = MAX_PAYLOAD + 6: one byte more than the largest legal frame
        first.writeRaw(ByteBuffer.allocate(9).putInt(Protocol.MAX_PAYLOAD + 6).put((byte) Protocol.PING).putInt(0).array());
        AgentException e = assertThrows(AgentException.class, () -> {
            try {
                pending.exit().get(30, TimeUnit.SECONDS);
            } catch (java.util.concurrent.ExecutionException ex) {
                throw ex.getCause();
            }
        });
        assertEquals(0, e.errno(), e.getMessage());
        assertFalse(first.isOpen());
        assertTrue(agent.process.isAlive(), "agent must survive a malformed frame");

        try (AgentClient second = agent.accept()) {
            assertTrue(second.ping().compareTo(Duration.ofSeconds(5)) < 0);
            assertTrue(AgentHarness.alive(pid), "runs survive the dropped session");
        } finally {
            ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
        }
        assertTrue(agent.log().contains("frame len " + (Protocol.MAX_PAYLOAD + 6)), agent.log());
    }

    @Test
    void malformedPayload_truncatedExec_agentDropsSessionAndAcceptsANewOne() throws Exception {
        AgentClient first = agent.accept();
        // EXEC whose cwd str claims 1000 bytes but the payload ends after 4
        byte[] payload = ByteBuffer.allocate(12).putInt(0).putInt(0).putInt(1000).array();
        first.writeRaw(ByteBuffer.allocate(9 + payload.length).putInt(5 + payload.length).put((byte) Protocol.EXEC).putInt(1).put(payload).array());
        try (AgentClient second = agent.accept()) {
            second.ping();
        }
        first.close();
        assertTrue(agent.log().contains("malformed EXEC payload"), agent.log());
    }

    private static byte[] hello(String name) {
        return new PayloadWriter().u16(Protocol.VERSION).u32(0xf).str(name).toBytes();
    }

    private static byte[] exec(String script) {
        return new PayloadWriter().u32(0).u32(0).str("/").strList(java.util.List.of("/bin/sh", "-c", script)).strList(java.util.List.of()).toBytes();
    }

    @Test
    void secondHello_onSameStream_startsNewSessionAndFreesOldChannels() throws Exception {
        try (FrameChannel raw = agent.acceptRaw()) {
            raw.write(Protocol.HELLO, 0, hello("one"));
            assertEquals(Protocol.HELLO, raw.read().type());
            raw.write(Protocol.EXEC, 1, exec("echo $$; exec sleep 30"));
            Frame started = raw.read();
            assertEquals(Protocol.STARTED, started.type(), started.toString());
            int pid = new PayloadReader(started).i32();
            try {
                raw.write(Protocol.HELLO, 0, hello("two"));
                // frames of the old session may still be in flight before the new HELLO
                Frame f;
                do f = raw.read(); while (f.type() != Protocol.HELLO);
                // channel 1 belonged to the old session: reusing it must work, not collide with the sleeping run
                raw.write(Protocol.EXEC, 1, exec("echo reused"));
                assertEquals(Protocol.STARTED, raw.read().type());
                Frame out = raw.read();
                assertEquals(Protocol.STDOUT, out.type(), out.toString());
                assertEquals("reused\n", new String(out.payload(), java.nio.charset.StandardCharsets.UTF_8));
                assertEquals(Protocol.EXIT, raw.read().type());
                assertTrue(AgentHarness.alive(pid), "the old session's run keeps running");
            } finally {
                ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
            }
        }
    }
}
