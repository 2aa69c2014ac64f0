package dev.berth.engine.agent;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.berth.engine.Await;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The host trusts nothing the agent sends: a scripted fake agent breaks the protocol in specific ways. */
@Timeout(value = 20, unit = TimeUnit.SECONDS)
class AgentClientHostileAgentTest {
    private Path dir;
    private ServerSocketChannel server;
    private FrameChannel fake;   // the "agent" end, driven by the test
    private SocketChannel hostEnd;

    @BeforeEach
    void connect() throws Exception {
        dir = Files.createTempDirectory("berth-hostile");
        server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        server.bind(UnixDomainSocketAddress.of(dir.resolve("s")));
        hostEnd = SocketChannel.open(UnixDomainSocketAddress.of(dir.resolve("s")));
        fake = new FrameChannel(server.accept());
    }

    @AfterEach
    void close() throws Exception {
        fake.close();
        hostEnd.close();
        server.close();
        Files.deleteIfExists(dir.resolve("s"));
        Files.deleteIfExists(dir);
    }

    /** Runs the handshake against the fake agent, which answers HELLO with {@code version}. */
    private AgentClient handshake(int version) throws Exception {
        return handshake(version, 0);
    }

    /** The same, announcing {@code extraCaps} besides the usual ones. */
    private AgentClient handshake(int version, int extraCaps) throws Exception {
        CompletableFuture<AgentClient> c = CompletableFuture.supplyAsync(() -> {
            try {
                return AgentClient.handshake(hostEnd, Duration.ofSeconds(5));
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        });
        Frame hello = fake.read();
        assertEquals(Protocol.HELLO, hello.type());
        PayloadWriter w = new PayloadWriter().u16(version).u32((version >= 3 ? 0xf | Protocol.CAP_ATTACH : 0xf) | extraCaps).str("fake");
        if (version >= 3) w.str("0badcafe"); // version 3 on: the session tag
        fake.write(Protocol.HELLO, 0, w.toBytes());
        try {
            return c.get(30, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            throw (Exception) e.getCause().getCause();
        }
    }

    private static AgentException failureOf(CompletableFuture<?> f) {
        ExecutionException e = assertThrows(ExecutionException.class, () -> f.get(30, TimeUnit.SECONDS));
        assertTrue(e.getCause() instanceof AgentException, e.getCause().toString());
        return (AgentException) e.getCause();
    }

    @Test
    void versionOneAgent_stillSpoken_itsTunnelsAttributedToNoRun() throws Exception {
        AgentClient client = handshake(1);
        java.util.concurrent.BlockingQueue<int[]> opened = new java.util.concurrent.LinkedBlockingQueue<>();
        client.setTunnelHandler(t -> {
            opened.add(new int[] {t.port(), t.execChannel()});
            return new Tunnel.Sink() {
                @Override public void onData(java.nio.ByteBuffer data) { }
                @Override public void onClose() { }
                @Override public void onReset(String reason) { }
            };
        });
        fake.write(Protocol.TUNNEL_OPEN, 0x80000001, new PayloadWriter().u16(3128).toBytes()); // BAP/1: no exec field
        int[] t = opened.poll(30, TimeUnit.SECONDS);
        assertEquals(3128, t[0]);
        assertEquals(0, t[1]);
        assertTrue(client.isOpen());
        client.close();
    }

    /** The fake agent opens tunnel 0x80000001; its sink counts into {@code got}. Returns whether it is flow controlled. */
    private boolean openCountingTunnel(AgentClient client, java.util.concurrent.atomic.AtomicLong got) throws Exception {
        CompletableFuture<Boolean> flowControlled = new CompletableFuture<>();
        client.setTunnelHandler(t -> {
            flowControlled.complete(t.flowControlled());
            return new Tunnel.Sink() {
                @Override public void onData(java.nio.ByteBuffer data) { got.addAndGet(data.remaining()); }
                @Override public void onClose() { }
                @Override public void onReset(String reason) { }
            };
        });
        fake.write(Protocol.TUNNEL_OPEN, 0x80000001, new PayloadWriter().u16(3128).u32(0).toBytes());
        return flowControlled.get(30, TimeUnit.SECONDS);
    }

    /** An agent with CAP_TUNNEL_WINDOW that sends more than its credit on a tunnel breaks the protocol. */
    @Test
    void tunnelWindow_agentSendsPastItsCredit_isAProtocolViolation() throws Exception {
        AgentClient client = handshake(3, Protocol.CAP_TUNNEL_WINDOW);
        java.util.concurrent.atomic.AtomicLong got = new java.util.concurrent.atomic.AtomicLong();
        assertTrue(openCountingTunnel(client, got));
        fake.write(Protocol.DATA, 0x80000001, new byte[Tunnel.WINDOW]); // all of its credit: fine
        fake.write(Protocol.DATA, 0x80000001, new byte[1]);             // one byte more than it was given
        Await.within(Duration.ofSeconds(5), () -> !client.isOpen());
        assertFalse(client.isOpen(), "the host kept talking to an agent that broke the tunnel window");
        assertEquals(Tunnel.WINDOW, got.get());
    }

    /** An agent without CAP_TUNNEL_WINDOW (it predates it) gets tunnels without flow control, as before. */
    @Test
    void tunnelWindow_agentWithoutTheCap_tunnelsNotFlowControlled() throws Exception {
        AgentClient client = handshake(3);
        java.util.concurrent.atomic.AtomicLong got = new java.util.concurrent.atomic.AtomicLong();
        assertFalse(openCountingTunnel(client, got));
        for (int i = 0; i < 3; i++) fake.write(Protocol.DATA, 0x80000001, new byte[Tunnel.WINDOW]);
        Await.within(Duration.ofSeconds(5), () -> got.get() >= 3L * Tunnel.WINDOW);
        assertEquals(3L * Tunnel.WINDOW, got.get());
        assertTrue(client.isOpen());
        client.close();
    }

    @Test
    void handshake_versionMismatch_failsAndCloses() {
        AgentException e = assertThrows(AgentException.class, () -> handshake(4));
        assertTrue(e.getMessage().contains("agent speaks protocol version 4, this host speaks 3 (and 2, 1)"), e.getMessage());
    }

    @Test
    void handshake_version2Agent_spokenWithoutRunNamesOrAttach() throws Exception {
        AgentClient client = handshake(2);
        assertTrue(client.isOpen());
        assertTrue(!client.supportsAttach(), "a version-2 agent has no session tag: runs cannot be re-attached");
        AgentException e = assertThrows(AgentException.class, () -> client.attach("0badcafe-1", new AgentHarness.Output()));
        assertEquals(95, e.errno());
        client.close();
    }


    @Test
    void frame_oversizedLen_failsPendingCallsAndClosesBeforeAllocating() throws Exception {
        AgentClient client = handshake(Protocol.VERSION);
        CompletableFuture<FileChunk> read = CompletableFuture.supplyAsync(() -> {
            try {
                return client.readFile("/x", 0, 10);
            } catch (Exception e) {
                throw new java.util.concurrent.CompletionException(e);
            }
        });
        Frame req = fake.read();
        assertEquals(Protocol.FILE_READ, req.type());
        // 2 GiB announced: allocating it first would be the bug
        fake.writeRaw(ByteBuffer.allocate(9).putInt(0x7fff_fff0).put((byte) Protocol.OK).putInt(req.chan()).array());
        AgentException e = failureOf(read);
        assertEquals(0, e.errno());
        assertTrue(e.getMessage().contains("frame len"), e.getMessage());
        assertFalse(client.isOpen());
    }

    @Test
    void fileList_countLargerThanPayload_isAProtocolViolation() throws Exception {
        AgentClient client = handshake(Protocol.VERSION);
        CompletableFuture<List<FileEntry>> list = CompletableFuture.supplyAsync(() -> {
            try {
                return client.listFiles("/");
            } catch (Exception e) {
                throw new java.util.concurrent.CompletionException(e);
            }
        });
        Frame req = fake.read();
        fake.write(Protocol.OK, req.chan(), new PayloadWriter().u32(0xffff_ffffL).toBytes());
        AgentException e = failureOf(list);
        assertTrue(e.getMessage().contains("count"), e.getMessage());
        assertFalse(client.isOpen());
    }

    @Test
    void connectionLost_failsExitOfRunningExec() throws Exception {
        AgentClient client = handshake(Protocol.VERSION);
        CompletableFuture<ExecHandle> exec = CompletableFuture.supplyAsync(() -> {
            try {
                return client.exec(new ExecRequest(List.of("x"), List.of(), "/", 0, false), new AgentHarness.Output());
            } catch (Exception e) {
                throw new java.util.concurrent.CompletionException(e);
            }
        });
        Frame req = fake.read();
        assertEquals(Protocol.EXEC, req.type());
        fake.write(Protocol.STARTED, req.chan(), new PayloadWriter().u32(4242).toBytes());
        ExecHandle h = exec.get(30, TimeUnit.SECONDS);
        assertEquals(4242, h.pid());
        fake.close();
        AgentException e = failureOf(h.exit());
        assertEquals(0, e.errno());
        assertThrows(AgentException.class, client::ping);
    }

    @Test
    void attach_answeredWithStartedInsteadOfAttached_isAProtocolViolation() throws Exception {
        AgentClient client = handshake(Protocol.VERSION);
        CompletableFuture<ExecHandle> attach = CompletableFuture.supplyAsync(() -> {
            try {
                return client.attach("0badcafe-7", new AgentHarness.Output());
            } catch (Exception e) {
                throw new java.util.concurrent.CompletionException(e);
            }
        });
        Frame req = fake.read();
        assertEquals(Protocol.ATTACH, req.type());
        PayloadReader r = new PayloadReader(req);
        assertEquals("0badcafe-7", r.str());
        r.end();
        fake.write(Protocol.STARTED, req.chan(), new PayloadWriter().u32(4242).toBytes());
        AgentException e = failureOf(attach);
        assertTrue(e.getMessage().contains("protocol violation"), e.getMessage());
        assertFalse(client.isOpen());
    }

    @Test
    void attach_attachedWithDroppedCount_thenKeptOutputAndExit_reachTheHandle() throws Exception {
        AgentClient client = handshake(Protocol.VERSION);
        AgentHarness.Output out = new AgentHarness.Output();
        CompletableFuture<ExecHandle> attach = CompletableFuture.supplyAsync(() -> {
            try {
                return client.attach("0badcafe-7", out);
            } catch (Exception e) {
                throw new java.util.concurrent.CompletionException(e);
            }
        });
        Frame req = fake.read();
        fake.write(Protocol.ATTACHED, req.chan(), new PayloadWriter().u32(4242).u64(1000).toBytes());
        fake.write(Protocol.STDOUT, req.chan(), "kept\n".getBytes(java.nio.charset.StandardCharsets.UTF_8));
        fake.write(Protocol.EXIT, req.chan(), new byte[] {0, 0, 0, 3, 0, 0, 0, 0, 0});
        ExecHandle h = attach.get(30, TimeUnit.SECONDS);
        assertEquals(4242, h.pid());
        assertEquals(1000, h.droppedWhileDetached());
        assertEquals("0badcafe-7", h.run());
        assertEquals(3, h.exit().get(30, TimeUnit.SECONDS).exitCode());
        assertEquals("kept\n", out.stdout());
        assertThrows(IllegalStateException.class, () -> h.writeStdin(new byte[] {1}), "an attached run's stdin is closed");
        client.close();
    }

    @Test
    void stdoutBeforeStarted_isAProtocolViolation() throws Exception {
        AgentClient client = handshake(Protocol.VERSION);
        CompletableFuture<ExecHandle> exec = CompletableFuture.supplyAsync(() -> {
            try {
                return client.exec(new ExecRequest(List.of("x"), List.of(), "/", 0, false), new AgentHarness.Output());
            } catch (Exception e) {
                throw new java.util.concurrent.CompletionException(e);
            }
        });
        Frame req = fake.read();
        fake.write(Protocol.STDOUT, req.chan(), new byte[] {1});
        ExecutionException e = assertThrows(ExecutionException.class, () -> exec.get(30, TimeUnit.SECONDS));
        assertTrue(e.getCause().getCause() instanceof AgentException, e.toString());
        assertFalse(client.isOpen());
    }

    /** EXIT's list of processes left behind (CAP_EXIT_LEFT): read within its bounds, refused beyond them. */
    @Test
    void exitLeft_listedWithinBounds_reachesTheExit_overTheBound_isAProtocolViolation() throws Exception {
        AgentClient client = handshake(Protocol.VERSION, Protocol.CAP_EXIT_LEFT);
        ExecHandle h = started(client);
        int chan = h.channel();
        fake.write(Protocol.EXIT, chan, new PayloadWriter().u32(0).u32(0).u8(0).u32(20).u32(1).u32(7).str("sleep 300").toBytes());
        ExecExit x = h.exit().get(30, TimeUnit.SECONDS);
        assertEquals(20, x.leftTotal());
        assertEquals(List.of(new ExecExit.LeftProcess(7, "sleep 300")), x.left());
        ExecHandle h2 = started(client);
        PayloadWriter w = new PayloadWriter().u32(0).u32(0).u8(0).u32(17).u32(17);
        for (int i = 0; i < 17; i++) w.u32(i + 2).str("x");
        fake.write(Protocol.EXIT, h2.channel(), w.toBytes());
        ExecutionException e = assertThrows(ExecutionException.class, () -> h2.exit().get(30, TimeUnit.SECONDS));
        assertTrue(e.getCause() instanceof AgentException, e.toString());
        assertFalse(client.isOpen(), "more than LEFT_LISTED listed breaks the protocol");
    }

    @Test
    void ttyExec_toAnAgentWithoutCapTty_refusedBeforeAnythingIsSent() throws Exception {
        AgentClient client = handshake(Protocol.VERSION);
        AgentException e = assertThrows(AgentException.class,
                () -> client.exec(new ExecRequest(List.of("sh"), List.of(), "/", 0, false, 80, 24), new AgentHarness.Output()));
        assertEquals(95, e.errno(), e.getMessage());
        assertTrue(client.isOpen());
        client.close();
    }

    /** An EXEC on {@code client} that the fake agent answers with STARTED. */
    private ExecHandle started(AgentClient client) throws Exception {
        CompletableFuture<ExecHandle> exec = CompletableFuture.supplyAsync(() -> {
            try {
                return client.exec(new ExecRequest(List.of("x"), List.of(), "/", 0, false), new AgentHarness.Output());
            } catch (Exception e) {
                throw new java.util.concurrent.CompletionException(e);
            }
        });
        Frame req = fake.read();
        fake.write(Protocol.STARTED, req.chan(), new PayloadWriter().u32(99).toBytes());
        return exec.get(30, TimeUnit.SECONDS);
    }
}
