package dev.berth.engine.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Malformed payloads of every request type the fuzzer may safely send (nothing that could write files, run
 * commands or set the clock if it happened to parse): the agent must answer or drop the session, never die.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class AgentFuzzTest {
    private static final int[] TYPES = {Protocol.HELLO, Protocol.PING, Protocol.STDIN, Protocol.SIGNAL, Protocol.FILE_READ,
            Protocol.FILE_LIST, Protocol.SYNC, Protocol.RNG_SEED, Protocol.DATA, Protocol.CLOSE, Protocol.RESET, Protocol.ERROR,
            Protocol.PONG, Protocol.OK, Protocol.STARTED, Protocol.EXIT, Protocol.TUNNEL_OPEN, 0x00, 0x7f, 0xff};

    private static byte[] hello() {
        return new PayloadWriter().u16(Protocol.VERSION).u32(0xf).str("fuzz").toBytes();
    }

    private static FrameChannel session(AgentHarness agent) throws Exception {
        FrameChannel raw = agent.acceptRaw();
        raw.write(Protocol.HELLO, 0, hello());
        assertEquals(Protocol.HELLO, raw.read().type());
        return raw;
    }

    /** Sends PING and reads until PONG (session alive) or EOF (session dropped). */
    private static boolean alive(FrameChannel raw, long nonce) throws IOException {
        try {
            raw.write(Protocol.PING, 0, new PayloadWriter().u64(nonce).toBytes());
            for (;;) {
                Frame f = raw.read();
                if (f.type() == Protocol.PONG && new PayloadReader(f).i64() == nonce) return true;
            }
        } catch (ProtocolException e) {
            throw e; // the agent sent garbage: that is a failure, not a dropped session
        } catch (IOException e) {
            return false; // EOF, EPIPE, ECONNRESET: the agent closed the session
        }
    }

    @Test
    void randomPayloads_everyType_agentSurvivesAndServesNewSessions() throws Exception {
        Random rnd = new Random(20261129);
        int dropped = 0, answered = 0;
        try (AgentHarness agent = new AgentHarness()) {
            FrameChannel raw = session(agent);
            for (int i = 0; i < 250; i++) {
                int type = TYPES[rnd.nextInt(TYPES.length)];
                byte[] p = new byte[rnd.nextInt(4) == 0 ? rnd.nextInt(4096) : rnd.nextInt(24)];
                rnd.nextBytes(p);
                if (rnd.nextBoolean() && p.length >= 4) p[0] = p[1] = 0; // plausible small str/count prefixes
                int chan = switch (rnd.nextInt(4)) {
                    case 0 -> 0;
                    case 1 -> 0x8000_0000 | rnd.nextInt(4);
                    default -> 1 + rnd.nextInt(8);
                };
                raw.write(type, chan, p);
                if (alive(raw, i)) {
                    answered++;
                } else {
                    dropped++;
                    raw.close();
                    raw = session(agent);
                }
            }
            // every proper prefix of a valid EXEC is malformed: parsing must stop at each boundary without running it
            byte[] exec = new PayloadWriter().u32(0).u32(0).str("/").strList(List.of("/bin/true")).strList(List.of("A=1")).toBytes();
            for (int cut = 0; cut < exec.length; cut++) {
                raw.write(Protocol.EXEC, 1, Arrays.copyOf(exec, cut));
                assertTrue(!alive(raw, cut), "truncated EXEC (" + cut + " of " + exec.length + " bytes) was accepted");
                raw.close();
                raw = session(agent);
            }
            assertTrue(agent.process.isAlive(), "agent died; log:\n" + agent.log());
            assertTrue(alive(raw, -1));
            raw.close();
        }
        assertTrue(dropped > 15 && answered > 15, "fuzzer too one-sided: dropped " + dropped + ", answered " + answered);
    }
}
