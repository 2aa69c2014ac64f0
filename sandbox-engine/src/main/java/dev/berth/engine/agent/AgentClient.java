package dev.berth.engine.agent;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Host side of the Berth agent protocol (tool-schemas/agent-protocol.md) over one connected byte stream.
 *
 * <p>Thread-safe: any number of threads may exec, read and write files concurrently; frames of different channels
 * interleave on the stream. One reader thread per client dispatches incoming frames to listeners, so listeners must
 * not block.
 *
 * <p>Nothing the agent sends is trusted: lengths are checked against MAX_PAYLOAD before allocation and a protocol
 * violation closes the client (pending calls fail with {@link AgentException}).
 */
public final class AgentClient implements AutoCloseable {
    /** FILE_WRITE flags, for {@link #writeFile}. */
    public static final int WRITE_TRUNCATE = Protocol.WRITE_TRUNCATE;
    public static final int WRITE_APPEND = Protocol.WRITE_APPEND;
    public static final int WRITE_MKDIRS = Protocol.WRITE_MKDIRS;

    private static final System.Logger LOG = System.getLogger(AgentClient.class.getName());
    private static final String HOST_NAME = "berth-host/1";
    /** How long a request waits for its answer; a hung agent must not hang the caller forever. */
    private static final Duration DEFAULT_REQUEST_TIMEOUT = Duration.ofSeconds(60);

    private final FrameChannel io;
    /** Host channels in use: an {@link ExecChannel} or a {@code CompletableFuture<Frame>} of a one-shot request. */
    private final Map<Integer, Object> channels = new ConcurrentHashMap<>();
    private final Map<Long, CompletableFuture<Long>> pings = new ConcurrentHashMap<>();
    private final AtomicInteger nextChan = new AtomicInteger(1);
    private final CompletableFuture<Frame> hello = new CompletableFuture<>();
    private final TunnelRouter tunnels = new TunnelRouter(this);
    /** Writes DATA, CLOSE, WINDOW and RESET of port streams, in order, off the caller's (and the reader's) thread. */
    private final java.util.concurrent.ExecutorService portWriter =
            java.util.concurrent.Executors.newSingleThreadExecutor(Thread.ofVirtual().name("berth-agent-port-writer").factory());
    private final Thread reader;
    private volatile AgentException closedBecause;
    private volatile Duration requestTimeout = DEFAULT_REQUEST_TIMEOUT;
    private volatile int agentCaps;
    private volatile String agentName = "";
    /** The session tag of the agent's HELLO (version 3 on); null for an older agent. */
    private volatile String agentSession;

    private AgentClient(SocketChannel channel) throws IOException {
        this.io = new FrameChannel(channel);
        this.reader = Thread.ofVirtual().name("berth-agent-reader").unstarted(this::readLoop);
    }

    /** Connects over an already connected stream and performs the HELLO exchange within {@code helloTimeout}. */
    public static AgentClient handshake(SocketChannel channel, Duration helloTimeout) throws IOException {
        AgentClient c = new AgentClient(channel);
        c.reader.start();
        try {
            int caps = Protocol.CAP_EXEC | Protocol.CAP_FILES | Protocol.CAP_TUNNEL | Protocol.CAP_GUEST_OPS | Protocol.CAP_PORTS | Protocol.CAP_ATTACH
                    | Protocol.CAP_TUNNEL_WINDOW | Protocol.CAP_EXIT_LEFT;
            c.send(Protocol.HELLO, 0, new PayloadWriter().u16(Protocol.VERSION).u32(caps).str(HOST_NAME).toBytes());
            Frame f = c.await(c.hello, helloTimeout, "HELLO");
            PayloadReader r = new PayloadReader(f);
            int version = r.u16();
            c.agentCaps = (int) r.u32();
            c.agentName = r.str();
            if (version >= 3) c.agentSession = r.str();
            r.end();
            // Versions 2 and 1 are still spoken, so a microVM parked or adopted with an older agent in its memory keeps
            // working: 2 lacks the session (no re-attaching runs), 1 also TUNNEL_OPEN's exec (tunnels attributed to no run).
            if (version != Protocol.VERSION && version != 2 && version != 1)
                throw new AgentException(0, "agent speaks protocol version " + version + ", this host speaks " + Protocol.VERSION + " (and 2, 1)");
            if (c.agentSession != null && (c.agentSession.isEmpty() || c.agentSession.length() > 32 || c.agentSession.indexOf('-') >= 0))
                throw new AgentException(0, "agent announced a malformed session tag '" + c.agentSession + "'");
            return c;
        } catch (IOException | RuntimeException e) {
            c.close();
            throw e;
        }
    }

    /** Capability bits the agent announced in its HELLO. */
    public int agentCapabilities() { return agentCaps; }

    /** Whether the agent runs every command confined below itself ({@code --isolate-runs}, HELLO cap CAP_CONFINED_RUNS). */
    public boolean confinedRuns() { return (agentCaps & Protocol.CAP_CONFINED_RUNS) != 0; }

    /** Whether EXIT lists the processes a run left behind (HELLO cap CAP_EXIT_LEFT, announced by both sides). */
    boolean exitLeft() { return (agentCaps & Protocol.CAP_EXIT_LEFT) != 0; }

    /** Build id the agent announced in its HELLO. */
    public String agentName() { return agentName; }

    /** How long one-shot requests (and EXEC until STARTED) wait for the agent. */
    public void setRequestTimeout(Duration timeout) {
        if (timeout.isNegative() || timeout.isZero()) throw new IllegalArgumentException("request timeout must be positive: " + timeout);
        this.requestTimeout = timeout;
    }

    // ------------------------------------------------------------------ exec

    /** Starts a process. Output arrives on {@code listener}; the returned handle completes when EXIT arrives. */
    public ExecHandle exec(ExecRequest request, ExecListener listener) throws IOException {
        if (request.tty() && (agentCaps & Protocol.CAP_TTY) == 0) throw new AgentException(95, "agent '" + agentName + "' cannot run on a terminal (no CAP_TTY; it predates it)");
        PayloadWriter w = new PayloadWriter()
                .u32((request.stdinOpen() ? Protocol.EXEC_STDIN : 0) | (request.tty() ? Protocol.EXEC_TTY : 0))
                .u32(request.timeoutMillis())
                .str(request.cwd())
                .strList(request.argv())
                .strList(request.env());
        byte[] payload = (request.tty() ? w.u16(request.cols()).u16(request.rows()) : w).toBytes();
        int chan = allocate();
        String run = agentSession == null ? null : agentSession + "-" + Integer.toUnsignedString(chan);
        ExecChannel ec = new ExecChannel(this, chan, listener, request.stdinOpen() || request.tty(), run, false, request.tty());
        channels.put(chan, ec);
        try {
            send(Protocol.EXEC, chan, payload);
            await(ec.started, requestTimeout, "EXEC " + request.argv().getFirst());
        } catch (IOException e) {
            channels.remove(chan, ec);
            throw e;
        }
        return ec;
    }

    /** Whether the agent can hand over runs of an earlier session (HELLO cap CAP_ATTACH). */
    public boolean supportsAttach() { return (agentCaps & Protocol.CAP_ATTACH) != 0 && agentSession != null; }

    /**
     * Takes over a run that an earlier connection started ({@link ExecHandle#run()}), on this connection (ATTACH).
     * Output the agent kept while no host was attached arrives on {@code listener} first, in order; if the run ended
     * meanwhile, the handle's exit completes right after. {@link ExecHandle#droppedWhileDetached()} says how many
     * older output bytes the agent had to drop. Fails with errno 2 (ENOENT) when the agent knows no such run.
     */
    public ExecHandle attach(String run, ExecListener listener) throws IOException { return attach(run, listener, false); }

    /** {@link #attach(String, ExecListener)} of a run on a terminal ({@code tty}): it takes input and resizes again. */
    public ExecHandle attach(String run, ExecListener listener, boolean tty) throws IOException {
        if (run == null || run.isEmpty() || run.length() > 47) throw new IllegalArgumentException("run name must be 1..47 characters: " + run);
        if (!supportsAttach()) throw new AgentException(95, "agent '" + agentName + "' cannot re-attach runs (no CAP_ATTACH; it predates it)");
        int chan = allocate();
        ExecChannel ec = new ExecChannel(this, chan, listener, tty, run, true, tty);
        channels.put(chan, ec);
        try {
            send(Protocol.ATTACH, chan, new PayloadWriter().str(run).toBytes());
            await(ec.started, requestTimeout, "ATTACH " + run);
        } catch (IOException e) {
            channels.remove(chan, ec);
            throw e;
        }
        return ec;
    }

    // ------------------------------------------------------------------ files

    public FileChunk readFile(String path, long offset, int maxLen) throws IOException {
        if (maxLen < 0 || maxLen > Protocol.FILE_READ_MAX)
            throw new IllegalArgumentException("maxLen must be 0.." + Protocol.FILE_READ_MAX + ", got " + maxLen);
        if (offset < 0) throw new IllegalArgumentException("offset must not be negative: " + offset);
        Frame ok = request(Protocol.FILE_READ, new PayloadWriter().str(path).u64(offset).u32(maxLen).toBytes(), "FILE_READ " + path);
        PayloadReader r = new PayloadReader(ok);
        long size = r.i64();
        int mode = (int) r.u32();
        if (r.remaining() > maxLen) throw protocolViolation(new ProtocolException("FILE_READ " + path + " returned " + r.remaining() + " bytes, asked for at most " + maxLen));
        return new FileChunk(size, mode, r.rest());
    }

    /**
     * Reads a whole file in chunks. Fails with errno EFBIG (27) if it is larger than {@code maxBytes}; a file that
     * changes size while being read is read up to the size seen in the first chunk (or until it ends earlier).
     */
    public byte[] readWholeFile(String path, int maxBytes) throws IOException {
        FileChunk first = readFile(path, 0, Math.min(Protocol.FILE_READ_MAX, maxBytes));
        if (first.fileSize() > maxBytes) throw new AgentException(27, path + ": file of " + first.fileSize() + " bytes exceeds the cap of " + maxBytes);
        ByteArrayOutputStream out = new ByteArrayOutputStream((int) first.fileSize());
        out.writeBytes(first.data());
        byte[] last = first.data();
        while (out.size() < first.fileSize() && last.length > 0) {
            int want = (int) Math.min(Protocol.FILE_READ_MAX, first.fileSize() - out.size());
            last = readFile(path, out.size(), want).data();
            out.writeBytes(last);
        }
        return out.toByteArray();
    }

    public long writeFile(String path, int mode, int flags, byte[] data) throws IOException {
        byte[] payload = new PayloadWriter().str(path).u32(mode).u32(flags).bytes(data).toBytes();
        PayloadReader r = new PayloadReader(request(Protocol.FILE_WRITE, payload, "FILE_WRITE " + path));
        long written = r.i64();
        r.end();
        return written;
    }

    /** Writes {@code data} of any size as a new file: the first chunk truncates (and creates parents), the rest append. */
    public long writeWholeFile(String path, int mode, byte[] data) throws IOException {
        int chunk = Protocol.MAX_PAYLOAD - 64 - path.getBytes(java.nio.charset.StandardCharsets.UTF_8).length;
        if (chunk <= 0) throw new IllegalArgumentException("path too long: " + path.length() + " chars");
        long total = 0;
        int off = 0;
        do {
            int n = Math.min(chunk, data.length - off);
            byte[] part = java.util.Arrays.copyOfRange(data, off, off + n);
            int flags = off == 0 ? Protocol.WRITE_TRUNCATE | Protocol.WRITE_MKDIRS : Protocol.WRITE_APPEND;
            total += writeFile(path, mode, flags, part);
            off += n;
        } while (off < data.length);
        return total;
    }

    public List<FileEntry> listFiles(String path) throws IOException {
        PayloadReader r = new PayloadReader(request(Protocol.FILE_LIST, new PayloadWriter().str(path).toBytes(), "FILE_LIST " + path));
        long count = r.u32();
        // each entry is at least 25 bytes: refuse a count the payload cannot hold before sizing anything by it
        if (count > r.remaining() / 25) throw protocolViolation(new ProtocolException("FILE_LIST count " + count + " cannot fit in " + r.remaining() + " bytes"));
        List<FileEntry> out = new ArrayList<>((int) count);
        for (long i = 0; i < count; i++) {
            String name = r.str();
            int kind = r.u8();
            long size = r.i64();
            int mode = (int) r.u32();
            long mtime = r.i64();
            out.add(new FileEntry(name, (char) kind, size, mode, mtime));
        }
        r.end();
        return out;
    }

    // ------------------------------------------------------------------ guest ops

    public void sync() throws IOException {
        request(Protocol.SYNC, new byte[0], "SYNC");
    }

    public void setClock(Instant now) throws IOException {
        long ns;
        try {
            ns = Math.addExact(Math.multiplyExact(now.getEpochSecond(), 1_000_000_000L), now.getNano());
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException("instant not representable as i64 nanoseconds: " + now);
        }
        request(Protocol.CLOCK_SET, new PayloadWriter().u64(ns).toBytes(), "CLOCK_SET");
    }

    public void seedRng(byte[] seed) throws IOException {
        seedRngCredited(seed);
    }

    /** Mixes {@code seed} into the guest RNG; returns whether the kernel also credited it as entropy (RNDADDENTROPY). */
    public boolean seedRngCredited(byte[] seed) throws IOException {
        if (seed.length == 0) throw new IllegalArgumentException("seed must not be empty");
        PayloadReader r = new PayloadReader(request(Protocol.RNG_SEED, new PayloadWriter().bytes(seed).toBytes(), "RNG_SEED"));
        int credited = r.u8();
        r.end();
        return credited != 0;
    }

    public Duration ping() throws IOException {
        long nonce = ThreadLocalRandom.current().nextLong();
        CompletableFuture<Long> pong = new CompletableFuture<>();
        pings.put(nonce, pong);
        long t0 = System.nanoTime();
        try {
            send(Protocol.PING, 0, new PayloadWriter().u64(nonce).toBytes());
            long t1 = await(pong, requestTimeout, "PING");
            return Duration.ofNanos(t1 - t0);
        } finally {
            pings.remove(nonce);
        }
    }

    // ------------------------------------------------------------------ tunnels

    /** Installs the handler for agent-opened egress tunnels (TUNNEL_OPEN). Without one, tunnels are RESET. */
    public void setTunnelHandler(TunnelHandler handler) { tunnels.setHandler(handler); }

    void forgetTunnel(int chan) { tunnels.forget(chan); }

    // ------------------------------------------------------------------ inbound ports

    /** Whether the agent can open inbound port streams (HELLO cap CAP_PORTS). */
    public boolean supportsPorts() { return (agentCaps & Protocol.CAP_PORTS) != 0; }

    /**
     * Connects to 127.0.0.1:{@code port} inside the sandbox (PORT_OPEN) and returns the stream once the agent has
     * connected. Bytes from the app go to {@code sink}, possibly before this method returns. Fails with an
     * {@link AgentException} carrying the errno (111 ECONNREFUSED when nothing listens there).
     */
    public PortStream openPort(int port, PortStream.Sink sink) throws IOException {
        if (port < 1 || port > 65535) throw new IllegalArgumentException("port must be 1..65535, got " + port);
        if (!supportsPorts()) throw new AgentException(95, "agent '" + agentName + "' cannot open inbound ports (no CAP_PORTS; it predates them)");
        int chan = allocate();
        PortChannel pc = new PortChannel(this, portWriter, chan, port, sink);
        channels.put(chan, pc);
        try {
            send(Protocol.PORT_OPEN, chan, new PayloadWriter().u16(port).toBytes());
            await(pc.opened, requestTimeout, "PORT_OPEN 127.0.0.1:" + port);
        } catch (IOException e) {
            if (!pc.opened.isDone() || pc.opened.isCompletedExceptionally()) {
                channels.remove(chan, pc);
                if (!pc.opened.isDone()) pc.reset("host gave up waiting for PORT_OPENED");
            }
            throw e;
        }
        return pc;
    }

    void forgetPort(int chan, PortChannel pc) { channels.remove(chan, pc); }

    // ------------------------------------------------------------------ lifecycle

    public boolean isOpen() { return closedBecause == null && io.isOpen(); }

    @Override
    public void close() {
        shutdown(new AgentException("agent client closed", null));
    }

    /** Test hook: writes raw bytes (e.g. a malformed frame) to the stream. */
    void writeRaw(byte[] bytes) throws IOException { io.writeRaw(bytes); }

    // ------------------------------------------------------------------ internals

    /** The AgentException an ERROR frame stands for; a malformed ERROR is itself a protocol violation. */
    static AgentException errorOf(Frame f, String what) throws ProtocolException {
        PayloadReader r = new PayloadReader(f);
        long code = r.u32();
        String msg = r.str();
        r.end();
        if (code == 0 || code > 4095) throw new ProtocolException("ERROR with errno " + code + " outside 1..4095: " + msg);
        return new AgentException((int) code, what + " failed: " + msg + " (errno " + code + ")");
    }

    private int allocate() {
        for (;;) {
            int c = nextChan.getAndUpdate(v -> v >= 0x7fff_ffff ? 1 : v + 1);
            if (!channels.containsKey(c)) return c;
        }
    }

    private Frame request(int type, byte[] payload, String what) throws IOException {
        int chan = allocate();
        CompletableFuture<Frame> answer = new CompletableFuture<>();
        channels.put(chan, answer);
        try {
            send(type, chan, payload);
            Frame f = await(answer, requestTimeout, what);
            if (f.type() == Protocol.ERROR) {
                try {
                    throw errorOf(f, what);
                } catch (ProtocolException e) {
                    throw protocolViolation(e); // unreachable in practice: dispatch() validated the frame already
                }
            }
            return f;
        } finally {
            channels.remove(chan, answer);
        }
    }

    private <T> T await(CompletableFuture<T> f, Duration timeout, String what) throws IOException {
        try {
            return f.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof AgentException ae) {
                // rethrow a fresh exception so the caller's stack is in the trace, keeping errno
                AgentException copy = ae.errno() > 0 ? new AgentException(ae.errno(), ae.getMessage()) : new AgentException(ae.getMessage(), ae);
                throw copy;
            }
            throw new AgentException(what + " failed: " + e.getCause(), e.getCause());
        } catch (TimeoutException e) {
            throw new AgentException(what + ": no answer from the agent within " + timeout.toMillis() + " ms", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AgentException(what + ": interrupted", e);
        }
    }

    void send(int type, int chan, byte[] payload) throws IOException { send(type, chan, payload, 0, payload.length); }

    void send(int type, int chan, byte[] payload, int off, int len) throws IOException {
        AgentException closed = closedBecause;
        if (closed != null) throw new AgentException("connection to agent is closed: " + closed.getMessage(), closed);
        try {
            io.write(type, chan, payload, off, len);
        } catch (IOException e) {
            AgentException ae = new AgentException("writing " + Protocol.typeName(type) + " to agent failed: " + e.getMessage(), e);
            shutdown(ae);
            throw ae;
        }
    }

    /** For writers that cannot report (tunnel executor): a failure closes the client, which notifies everyone. */
    void sendQuietly(int type, int chan, byte[] payload, int off, int len) {
        try {
            send(type, chan, payload, off, len);
        } catch (IOException e) {
            LOG.log(System.Logger.Level.DEBUG, "dropping {0} on closed agent connection", Protocol.typeName(type));
        }
    }

    private void readLoop() {
        try {
            while (true) dispatch(io.read());
        } catch (ProtocolException e) {
            shutdown(protocolViolation(e));
        } catch (IOException e) {
            shutdown(new AgentException("connection to agent lost: " + e.getMessage(), e));
        } catch (RuntimeException e) {
            shutdown(new AgentException("agent client reader failed: " + e, e));
        }
    }

    private AgentException protocolViolation(ProtocolException e) {
        AgentException ae = new AgentException("agent protocol violation: " + e.getMessage(), e);
        shutdown(ae);
        return ae;
    }

    private void dispatch(Frame f) throws ProtocolException {
        int chan = f.chan();
        switch (f.type()) {
            case Protocol.HELLO -> {
                // the tunnel router must know the agent's version before the first TUNNEL_OPEN that follows on this thread
                byte[] p = f.payload();
                if (p.length >= 6) tunnels.agentHello((p[0] & 0xff) << 8 | (p[1] & 0xff), java.nio.ByteBuffer.wrap(p, 2, 4).getInt());
                if (!hello.complete(f)) throw new ProtocolException("unexpected second HELLO");
                return;
            }
            case Protocol.PONG -> {
                PayloadReader r = new PayloadReader(f);
                long nonce = r.i64();
                r.end();
                CompletableFuture<Long> p = pings.get(nonce);
                if (p != null) p.complete(System.nanoTime());
                return;
            }
            default -> {}
        }
        if (!hello.isDone()) throw new ProtocolException(f + " before HELLO");
        if ((chan & Protocol.AGENT_CHANNEL_BIT) != 0) {
            tunnels.dispatch(f);
            return;
        }
        Object state = channels.get(chan);
        if (state == null) return; // the caller gave up (timeout) or the channel ended: nothing to deliver to
        if (state instanceof PortChannel pc) {
            try {
                if (pc.onFrame(f)) channels.remove(chan, pc);
            } catch (ProtocolException e) {
                throw e;
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "port stream sink failed on " + f + "; resetting the stream", e);
                pc.reset("host-side port sink failed");
            }
        } else if (state instanceof ExecChannel ec) {
            try {
                if (ec.onFrame(f)) channels.remove(chan, ec);
            } catch (ProtocolException e) {
                throw e;
            } catch (RuntimeException e) {
                // a listener threw: its problem, not the connection's
                LOG.log(System.Logger.Level.WARNING, "exec listener failed on " + f, e);
            }
        } else if (state instanceof CompletableFuture<?> cf) {
            if (f.type() != Protocol.OK && f.type() != Protocol.ERROR) throw new ProtocolException("unexpected " + f + " on request channel");
            if (f.type() == Protocol.ERROR) errorOf(f, "request"); // validate on the reader: a bad ERROR closes the client
            @SuppressWarnings("unchecked") CompletableFuture<Frame> answer = (CompletableFuture<Frame>) cf;
            channels.remove(chan, state);
            answer.complete(f);
        }
    }

    private void shutdown(AgentException cause) {
        synchronized (this) {
            if (closedBecause != null) return;
            closedBecause = cause;
        }
        io.close();
        hello.completeExceptionally(cause);
        for (Object state : channels.values()) {
            if (state instanceof ExecChannel ec) ec.fail(cause);
            else if (state instanceof PortChannel pc) pc.remoteReset("connection to agent lost: " + cause.getMessage());
            else if (state instanceof CompletableFuture<?> cf) cf.completeExceptionally(cause);
        }
        channels.clear();
        pings.values().forEach(p -> p.completeExceptionally(cause));
        tunnels.closeAll("connection to agent lost: " + cause.getMessage());
        portWriter.shutdown();
    }
}
