package dev.berth.engine.agent;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.berth.engine.Await;
import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.net.SocketException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
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
                    int n = data.remaining();
                    if (StandardCharsets.US_ASCII.decode(data.duplicate()).toString().equals("RESET")) tunnel.reset("client asked");
                    else tunnel.write(data);
                    tunnel.consumed(n); // delivered (echoed): the agent may read that much more
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
        assertEquals(agent.proxyPort, ports.poll(30, TimeUnit.SECONDS));
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
            assertEquals(0, execs.poll(30, TimeUnit.SECONDS), "a connection from outside every run");
        }
        // a grandchild of the run's started process connects
        ExecHandle run = sh("bash -c 'bash -c \"exec 3<>/dev/tcp/127.0.0.1/" + p + "; sleep 1\"'");
        assertEquals(run.channel(), execs.poll(30, TimeUnit.SECONDS));
        run.exit().get(20, TimeUnit.SECONDS);
        // a daemon that left the run's session and parent chain (setsid -f double-forks) is nobody's
        ExecHandle daemon = sh("setsid -f bash -c 'exec 3<>/dev/tcp/127.0.0.1/" + p + "; sleep 1'; sleep 2");
        assertEquals(0, execs.poll(30, TimeUnit.SECONDS));
        daemon.exit().get(20, TimeUnit.SECONDS);
        // a child that only changed its environment marker is still judged by its tree: the marker is forgeable
        ExecHandle other = sh("sleep 5");
        ExecHandle forger = sh("BERTH_RUN=forged-" + other.channel() + " bash -c 'exec 3<>/dev/tcp/127.0.0.1/" + p + "; sleep 1'");
        assertEquals(forger.channel(), execs.poll(30, TimeUnit.SECONDS));
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
        String reason = resets.poll(30, TimeUnit.SECONDS);
        assertNotNull(reason, "sink was not told about the client's reset");
        client.ping();
    }

    /**
     * Reported: the host pushed upstream bytes at a tunnel as fast as they came, and the agent reset a tunnel whose
     * client fell 8 MiB behind ("tunnel client is not reading"), so a slow consumer inside (a throttled disk, a busy
     * guest) lost its download. Now the tunnel is flow controlled: a client that does not read holds the host to
     * TUNNEL_WINDOW bytes (write() returns false, nothing is dropped), and once it reads it gets every byte.
     */
    @Test
    void tunnel_clientNotReading_hostHeldToTheWindow_thenEveryByteArrives() throws Exception {
        int total = 32 << 20;
        byte[] chunk = new byte[64 * 1024];
        new Random(7).nextBytes(chunk);
        java.util.concurrent.atomic.AtomicLong accepted = new java.util.concurrent.atomic.AtomicLong();
        java.util.concurrent.atomic.AtomicReference<Tunnel> tunnelRef = new java.util.concurrent.atomic.AtomicReference<>();
        java.util.concurrent.Semaphore writable = new java.util.concurrent.Semaphore(0);
        client.setTunnelHandler(tunnel -> {
            tunnelRef.set(tunnel);
            return new Tunnel.Sink() {
                @Override public void onData(ByteBuffer data) { tunnel.consumed(data.remaining()); }
                @Override public void onClose() { }
                @Override public void onReset(String reason) { resets.add(reason); }
                @Override public void onWritable() { writable.release(); }
            };
        });
        try (Socket s = connect()) {
            s.getOutputStream().write('x'); // the tunnel opens on accept; the byte makes sure the host saw it
            Await.within(Duration.ofSeconds(10), () -> tunnelRef.get() != null);
            Tunnel t = tunnelRef.get();
            assertNotNull(t, "no tunnel opened");
            assertTrue(t.flowControlled(), "this agent and host both announce CAP_TUNNEL_WINDOW");
            Thread producer = Thread.ofVirtual().start(() -> {
                try {
                    for (long sent = 0; sent < total; sent += chunk.length) {
                        accepted.addAndGet(chunk.length);
                        if (!t.write(ByteBuffer.wrap(chunk))) {
                            while (!t.writable()) writable.tryAcquire(100, TimeUnit.MILLISECONDS);
                        }
                    }
                    t.shutdownOutput();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            // the client reads nothing: the producer must come to a stop, held by the agent's credit
            long last = -1;
            while (accepted.get() != last) {
                last = accepted.get();
                Thread.sleep(500); // settling: the condition is "no progress", so it is observed over an interval
            }
            long socketBuffers = 16L << 20; // loopback send + receive buffers between agent and client, generously
            assertTrue(accepted.get() < Tunnel.WINDOW + socketBuffers + chunk.length,
                    "the host queued " + accepted.get() + " bytes for a client that reads nothing");
            assertTrue(accepted.get() < total, "nothing held the producer back");
            // now the client reads: everything arrives, in order, and nobody reset anything
            InputStream in = s.getInputStream();
            byte[] buf = new byte[chunk.length];
            long got = 0;
            for (int n; (n = in.readNBytes(buf, 0, buf.length)) > 0; got += n) {
                assertArrayEquals(java.util.Arrays.copyOf(chunk, n), java.util.Arrays.copyOf(buf, n), "bytes at " + got);
            }
            assertEquals(total, got);
            producer.join();
        }
        assertTrue(resets.isEmpty(), resets.toString());
        client.ping();
    }

    /** The other way: a host sink that has not passed bytes on stops the client after TUNNEL_WINDOW bytes. */
    @Test
    void tunnel_hostNotConsuming_clientHeldToTheWindow_consumedLetsMoreThrough() throws Exception {
        java.util.concurrent.atomic.AtomicLong received = new java.util.concurrent.atomic.AtomicLong();
        java.util.concurrent.atomic.AtomicReference<Tunnel> tunnelRef = new java.util.concurrent.atomic.AtomicReference<>();
        client.setTunnelHandler(tunnel -> {
            tunnelRef.set(tunnel);
            return new Tunnel.Sink() {
                @Override public void onData(ByteBuffer data) { received.addAndGet(data.remaining()); }
                @Override public void onClose() { }
                @Override public void onReset(String reason) { resets.add(reason); }
            };
        });
        try (Socket s = connect()) {
            Thread writer = Thread.ofVirtual().start(() -> {
                try {
                    s.getOutputStream().write(new byte[16 << 20]);
                } catch (IOException e) {
                    // closed at the end of the test
                }
            });
            Await.within(Duration.ofSeconds(10), () -> received.get() >= Tunnel.WINDOW);
            assertEquals(Tunnel.WINDOW, received.get(), "the agent sends exactly its credit");
            tunnelRef.get().consumed(Tunnel.WINDOW / 2);
            Await.within(Duration.ofSeconds(10), () -> received.get() >= Tunnel.WINDOW + Tunnel.WINDOW / 2);
            assertEquals(Tunnel.WINDOW + Tunnel.WINDOW / 2, received.get(), "consumed credit lets exactly that much more through");
            s.close();
            writer.join();
        }
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
