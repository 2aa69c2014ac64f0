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
