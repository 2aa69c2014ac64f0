package dev.berth.engine.agent;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.util.Random;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Inbound port streams (PORT_OPEN) against the real agent binary: the "app" is a plain server socket on this
 * machine's loopback (the harness runs the agent unsandboxed, so its 127.0.0.1 is ours).
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class AgentPortTest {
    private static final java.util.concurrent.Executor VTHREAD = r -> Thread.ofVirtual().start(r);
    private AgentHarness agent;
    private AgentClient client;
    private ServerSocket app;

    @BeforeEach
    void start() throws Exception {
        agent = new AgentHarness();
        client = agent.accept();
        app = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    }

    @AfterEach
    void stop() throws Exception {
        app.close();
        client.close();
        agent.close();
    }

    /** Collects what the app sends; consumes (grants credit) immediately unless told not to. */
    static final class Collector implements PortStream.Sink {
        final ByteArrayOutputStream got = new ByteArrayOutputStream();
        final CompletableFuture<Void> closed = new CompletableFuture<>();
        final CompletableFuture<String> reset = new CompletableFuture<>();
        final BlockingQueue<Boolean> writable = new LinkedBlockingQueue<>();
        final AtomicLong received = new AtomicLong();
        volatile boolean autoConsume = true;
        volatile PortStream stream;
        long unconsumed; // guarded by this

        @Override public void onData(ByteBuffer data) {
            int n = data.remaining();
            synchronized (this) {
                byte[] b = new byte[n];
                data.get(b);
                got.writeBytes(b);
                received.addAndGet(n);
                if (autoConsume && stream != null) stream.consumed(n);
                else unconsumed += n;
                notifyAll();
            }
        }
        @Override public void onClose() { closed.complete(null); }
        @Override public void onReset(String reason) { reset.complete(reason); }
        @Override public void onWritable() { writable.add(true); }

        synchronized void consumeBacklog(PortStream s) {
            autoConsume = true;
            if (unconsumed > 0) s.consumed((int) unconsumed);
            unconsumed = 0;
        }

        synchronized void awaitBytes(long n) throws InterruptedException {
            while (received.get() < n) wait();
        }
    }

    private PortStream open(Collector c) throws IOException {
        PortStream s = client.openPort(app.getLocalPort(), c);
        synchronized (c) {
            c.stream = s;
            if (c.autoConsume && c.unconsumed > 0) { s.consumed((int) c.unconsumed); c.unconsumed = 0; }
        }
        return s;
    }

    @Test
    void portStream_echoApp_bytesRoundTripBothWaysAndHalfCloseGivesEof() throws Exception {
        assertTrue(client.supportsPorts(), "agent announces CAP_PORTS");
        CompletableFuture<Void> echo = CompletableFuture.runAsync(() -> {
            try (Socket s = app.accept()) {
                s.getInputStream().transferTo(s.getOutputStream());
                s.shutdownOutput();
            } catch (IOException e) {
                throw new RuntimeException(e);
            }
        }, VTHREAD);
        byte[] data = new byte[3 << 20];
        new Random(13).nextBytes(data);
        Collector c = new Collector();
        PortStream s = open(c);
        for (int off = 0; off < data.length; off += 100_000) {
            if (!s.write(ByteBuffer.wrap(data, off, Math.min(100_000, data.length - off)))) {
                assertTrue(c.writable.poll(20, TimeUnit.SECONDS) != null, "onWritable after the agent returned credit");
            }
        }
        s.shutdownOutput();
        c.closed.get(30, TimeUnit.SECONDS);
        echo.get(30, TimeUnit.SECONDS);
        assertArrayEquals(data, c.got.toByteArray());
        assertFalse(c.reset.isDone(), "no reset on a clean close: " + c.reset.getNow(null));
    }

    @Test
    void portStream_nothingListens_errorEconnrefusedAtOnce() throws Exception {
        int port;
        try (ServerSocket probe = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = probe.getLocalPort();
        }
        AgentException e = assertThrows(AgentException.class, () -> client.openPort(port, new Collector()));
        assertEquals(111, e.errno(), e.getMessage());
        assertTrue(e.getMessage().contains("127.0.0.1:" + port), e.getMessage());
        assertTrue(client.isOpen(), "a refused port does not end the session");
        assertEquals(1, client.ping().isNegative() ? 0 : 1);
    }

    @Test
    void portStream_appNeverReads_hostStopsAtItsWindowAndResumesWhenTheAppReads() throws Exception {
        CompletableFuture<Socket> accepted = CompletableFuture.supplyAsync(() -> {
            try {
                return app.accept();
            } catch (IOException e) {
                throw new RuntimeException(e);
            }
        }, VTHREAD);
        Collector c = new Collector();
        PortStream s = open(c);
        Socket appSide = accepted.get(30, TimeUnit.SECONDS);
        // push while the stream accepts: the agent holds at most a window, the app's kernel buffers some more, and
        // then the credit stops coming back. (The app's receive buffer stays at its default: shrunk to 4 KiB, Linux
        // drained 320 KiB at 43 KiB/s, one persist-timer probe at a time, which is TCP's business, not ours.)
        byte[] chunk = new byte[64 * 1024];
        long pushed = 0;
        boolean stopped = false;
        for (int i = 0; i < 4096 && !stopped; i++) {
            if (!s.write(ByteBuffer.wrap(chunk))) {
                // "no more credit" is observed over an interval: a WINDOW still on its way wakes us and we go on
                stopped = c.writable.poll(1, TimeUnit.SECONDS) == null;
            }
            pushed += chunk.length;
        }
        assertTrue(stopped, "write() says stop before 256 MiB were pushed to an app that never reads");
        assertTrue(pushed < 64L << 20, "stopped after " + pushed + " bytes: bounded by window + socket buffers");
        assertFalse(c.reset.isDone(), "back-pressure, not a reset: " + c.reset.getNow(null));
        // the app reads now: everything pushed arrives, and the stream becomes writable again
        long want = pushed;
        CompletableFuture<Long> drained = CompletableFuture.supplyAsync(() -> {
            try (InputStream in = appSide.getInputStream()) {
                byte[] b = new byte[65536];
                long n = 0;
                while (n < want) {
                    int r = in.read(b);
                    if (r < 0) break;
                    n += r;
                }
                return n;
            } catch (IOException e) {
                throw new RuntimeException(e);
            }
        }, VTHREAD);
        assertTrue(c.writable.poll(30, TimeUnit.SECONDS) != null, "onWritable once the app reads");
        assertEquals(want, drained.get(30, TimeUnit.SECONDS));
        s.reset("test done");
    }

    @Test
    void portStream_hostNeverConsumes_agentSendsOneWindowAndTheAppBlocks() throws Exception {
        byte[] data = new byte[16 << 20];
        new Random(7).nextBytes(data);
        CountDownLatch wrote = new CountDownLatch(1);
        CompletableFuture<Void> writer = CompletableFuture.runAsync(() -> {
            try (Socket sock = app.accept(); OutputStream out = sock.getOutputStream()) {
                out.write(data);
                wrote.countDown();
                sock.shutdownOutput();
                sock.getInputStream().read(); // until the host closes
            } catch (IOException e) {
                throw new RuntimeException(e);
            }
        }, VTHREAD);
        Collector c = new Collector();
        c.autoConsume = false;
        PortStream s = open(c);
        c.awaitBytes(PortStream.WINDOW);
        // a PING round trip orders us after any DATA the agent could still have had queued
        client.ping();
        assertEquals(PortStream.WINDOW, c.received.get(), "the agent stops at one window while the host does not consume");
        assertEquals(1, wrote.getCount(), "the app's 16 MiB write is still blocked (TCP back-pressure)");
        c.consumeBacklog(s);
        c.closed.get(30, TimeUnit.SECONDS);
        assertArrayEquals(data, c.got.toByteArray());
        s.shutdownOutput();
        writer.get(30, TimeUnit.SECONDS);
    }

    @Test
    void portStream_hostReset_appSeesConnectionReset() throws Exception {
        CompletableFuture<String> seen = CompletableFuture.supplyAsync(() -> {
            try (Socket sock = app.accept()) {
                sock.getOutputStream().write("hello".getBytes());
                return sock.getInputStream().read() < 0 ? "eof" : "data";
            } catch (IOException e) {
                return "error: " + e.getMessage();
            }
        }, VTHREAD);
        Collector c = new Collector();
        PortStream s = open(c);
        c.awaitBytes(5);
        s.reset("preview closed");
        String r = seen.get(30, TimeUnit.SECONDS);
        assertTrue(r.startsWith("error") && r.toLowerCase().contains("reset"), r);
    }

    @Test
    void portStream_rawWindowZero_endsTheSession() throws Exception {
        client.close();
        FrameChannel raw = agent.acceptRaw();
        raw.write(Protocol.HELLO, 0, new PayloadWriter().u16(Protocol.VERSION).u32(0x2f).str("raw").toBytes());
        Frame hello = raw.read();
        assertEquals(Protocol.HELLO, hello.type());
        CompletableFuture<Socket> accepted = CompletableFuture.supplyAsync(() -> {
            try {
                return app.accept();
            } catch (IOException e) {
                throw new RuntimeException(e);
            }
        }, VTHREAD);
        raw.write(Protocol.PORT_OPEN, 7, new PayloadWriter().u16(app.getLocalPort()).toBytes());
        assertEquals(Protocol.PORT_OPENED, raw.read().type());
        accepted.get(30, TimeUnit.SECONDS).close();
        raw.write(Protocol.WINDOW, 7, new PayloadWriter().u32(0).toBytes());
        assertThrows(IOException.class, () -> { for (;;) raw.read(); }, "a WINDOW of 0 ends the session");
        // the agent reconnects and serves a new session
        client = agent.accept();
        client.ping();
    }
}
