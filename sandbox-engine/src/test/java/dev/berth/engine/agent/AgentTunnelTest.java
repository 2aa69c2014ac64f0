package dev.berth.engine.agent;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.net.SocketException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Random;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Egress tunnels: a client inside connects to the agent's proxy port; the host side here is an echo handler. */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class AgentTunnelTest {
    private AgentHarness agent;
    private AgentClient client;
    private final BlockingQueue<String> resets = new LinkedBlockingQueue<>();
    private final BlockingQueue<Integer> ports = new LinkedBlockingQueue<>();

    @BeforeEach
    void start() throws Exception {
        agent = new AgentHarness();
        client = agent.accept();
    }

    @AfterEach
    void stop() throws Exception {
        client.close();
        agent.close();
    }

    /** Echoes bytes back; "RESET" from the client makes the host reset the tunnel; EOF is answered with EOF. */
    private void installEcho() {
        client.setTunnelHandler(tunnel -> {
            ports.add(tunnel.port());
            return new Tunnel.Sink() {
                @Override
                public void onData(ByteBuffer data) {
                    if (StandardCharsets.US_ASCII.decode(data.duplicate()).toString().equals("RESET")) tunnel.reset("client asked");
                    else tunnel.write(data);
                }

                @Override
                public void onClose() { tunnel.shutdownOutput(); }

                @Override
                public void onReset(String reason) { resets.add(reason); }
            };
        });
    }

    private Socket connect() throws IOException {
        Socket s = new Socket("127.0.0.1", agent.proxyPort);
        s.setSoTimeout(10_000);
        return s;
    }

    @Test
    void tunnel_echoHandler_bytesRoundTripAndHalfCloseGivesEof() throws Exception {
        installEcho();
        byte[] data = new byte[3 << 20];
        new Random(5).nextBytes(data);
        try (Socket s = connect()) {
            // write from another thread: the echo flows back while we are still sending
            Thread writer = Thread.ofVirtual().start(() -> {
                try {
                    s.getOutputStream().write(data);
                    s.shutdownOutput();
                } catch (IOException e) {
                    throw new RuntimeException(e);
                }
            });
            byte[] back = s.getInputStream().readNBytes(data.length);
            assertArrayEquals(data, back);
            assertEquals(-1, s.getInputStream().read(), "host CLOSE after client CLOSE must reach the client as EOF");
            writer.join();
        }
        assertEquals(agent.proxyPort, ports.poll(5, TimeUnit.SECONDS));
        assertTrue(client.isOpen());
    }

    /** Records which EXEC each tunnel was attributed to, and resets it. */
    private BlockingQueue<Integer> recordExecs() {
        BlockingQueue<Integer> execs = new LinkedBlockingQueue<>();
        client.setTunnelHandler(tunnel -> {
            execs.add(tunnel.execChannel());
            tunnel.reset("seen");
            return new Tunnel.Sink() {
                @Override public void onData(ByteBuffer data) { }
                @Override public void onClose() { }
                @Override public void onReset(String reason) { }
            };
        });
        return execs;
    }

    private ExecHandle sh(String script) throws IOException {
        return client.exec(new ExecRequest(java.util.List.of("/bin/sh", "-c", script), java.util.List.of("PATH=/usr/bin:/bin"), "/",
                20_000, false), new ExecListener() {
            @Override public void onStdout(byte[] data) { }
            @Override public void onStderr(byte[] data) { }
        });
    }

    @Test
    void tunnelOpen_namesTheExecWhoseProcessTreeConnected_zeroForOutsidersAndDaemonsThatLeft() throws Exception {
        BlockingQueue<Integer> execs = recordExecs();
        int p = agent.proxyPort;
        try (Socket s = connect()) {
            assertEquals(0, execs.poll(5, TimeUnit.SECONDS), "a connection from outside every run");
        }
        // a grandchild of the run's started process connects
        ExecHandle run = sh("bash -c 'bash -c \"exec 3<>/dev/tcp/127.0.0.1/" + p + "; sleep 1\"'");
        assertEquals(run.channel(), execs.poll(5, TimeUnit.SECONDS));
        run.exit().get(20, TimeUnit.SECONDS);
        // a daemon that left the run's session and parent chain (setsid -f double-forks) is nobody's
        ExecHandle daemon = sh("setsid -f bash -c 'exec 3<>/dev/tcp/127.0.0.1/" + p + "; sleep 1'; sleep 2");
        assertEquals(0, execs.poll(5, TimeUnit.SECONDS));
        daemon.exit().get(20, TimeUnit.SECONDS);
        // a child that only changed its environment marker is still judged by its tree: the marker is forgeable
        ExecHandle other = sh("sleep 5");
        ExecHandle forger = sh("BERTH_RUN=forged-" + other.channel() + " bash -c 'exec 3<>/dev/tcp/127.0.0.1/" + p + "; sleep 1'");
        assertEquals(forger.channel(), execs.poll(5, TimeUnit.SECONDS));
        forger.exit().get(20, TimeUnit.SECONDS);
        other.signal(9);
    }

    @Test
    void tunnel_hostReset_clientSeesAbort() throws Exception {
        installEcho();
        try (Socket s = connect()) {
            s.getOutputStream().write("RESET".getBytes(StandardCharsets.US_ASCII));
            assertTrue(readEndsAbruptly(s.getInputStream()), "client must see the tunnel end");
        }
        client.ping();
    }

    @Test
    void tunnel_clientReset_sinkIsToldAndSessionSurvives() throws Exception {
        installEcho();
        Socket s = connect();
        s.getOutputStream().write('x');
        assertEquals('x', s.getInputStream().read());
        s.setSoLinger(true, 0); // close() sends RST
        s.close();
        String reason = resets.poll(5, TimeUnit.SECONDS);
        assertNotNull(reason, "sink was not told about the client's reset");
        client.ping();
    }

    @Test
    void tunnel_withoutHandler_isRefused() throws Exception {
        try (Socket s = connect()) {
            assertTrue(readEndsAbruptly(s.getInputStream()));
        }
        client.ping();
    }

    private static boolean readEndsAbruptly(InputStream in) throws IOException {
        try {
            return in.read() == -1;
        } catch (SocketException e) {
            return e.getMessage().contains("reset");
        }
    }
}
