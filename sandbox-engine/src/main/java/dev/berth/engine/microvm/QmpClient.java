package dev.berth.engine.microvm;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;
import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ObjectNode;

/**
 * A small QMP (QEMU Machine Protocol) client: JSON objects over a host-only unix socket.
 *
 * <p>Negotiates capabilities, matches responses to commands by {@code id}, and hands asynchronous events to
 * listeners. One daemon reader thread per client. Lines longer than {@link #MAX_LINE} close the client: QEMU is
 * trusted more than the guest, but it runs next to guest-controlled data, so nothing is read unbounded.
 */
final class QmpClient implements AutoCloseable {

    static final int MAX_LINE = 1 << 20;
    private static final ObjectMapper JSON = JsonMapper.builder().build();

    /** QMP answered {@code error}. */
    static final class QmpException extends IOException {
        final String errorClass;
        QmpException(String errorClass, String desc) { super(errorClass + ": " + desc); this.errorClass = errorClass; }
    }

    private final SocketChannel channel;
    private final Map<String, CompletableFuture<JsonNode>> pending = new ConcurrentHashMap<>();
    private final List<Consumer<JsonNode>> eventListeners = new java.util.concurrent.CopyOnWriteArrayList<>();
    private final AtomicLong ids = new AtomicLong();
    private final Object writeLock = new Object();
    private final CompletableFuture<JsonNode> greeting = new CompletableFuture<>();
    private final Thread reader;
    private volatile IOException failure;

    private QmpClient(SocketChannel channel, String name) {
        this.channel = channel;
        this.reader = Thread.ofPlatform().daemon().name("qmp-" + name).unstarted(this::readLoop);
    }

    /** Connects to {@code socket} (retrying until {@code timeout} while QEMU creates it) and negotiates. */
    static QmpClient connect(Path socket, String name, Duration timeout) throws IOException {
        long deadline = System.nanoTime() + timeout.toNanos();
        SocketChannel ch = null;
        IOException last = null;
        while (ch == null) {
            try {
                ch = SocketChannel.open(UnixDomainSocketAddress.of(socket));
            } catch (IOException e) {
                last = e;
                if (System.nanoTime() > deadline) throw new IOException("QMP socket " + socket + " not reachable: " + e.getMessage(), e);
                pollPause(5); // QEMU gives no notice before it listens: the connect is the check
            }
        }
        QmpClient c = new QmpClient(ch, name);
        c.reader.start();
        try {
            c.greeting.get(Math.max(1, (deadline - System.nanoTime()) / 1_000_000), TimeUnit.MILLISECONDS);
            c.execute("qmp_capabilities", null, Duration.ofSeconds(10));
        } catch (Exception e) {
            c.close();
            throw e instanceof IOException io ? io : new IOException("QMP negotiation failed: " + e, e);
        }
        return c;
    }

    void onEvent(Consumer<JsonNode> listener) { eventListeners.add(listener); }

    /** Runs {@code command}; returns its {@code return} value, or throws {@link QmpException} on {@code error}. */
    JsonNode execute(String command, Map<String, ?> arguments, Duration timeout) throws IOException {
        String id = "b" + ids.incrementAndGet();
        ObjectNode msg = JSON.createObjectNode();
        msg.put("execute", command);
        if (arguments != null) msg.set("arguments", JSON.valueToTree(arguments));
        msg.put("id", id);
        CompletableFuture<JsonNode> f = new CompletableFuture<>();
        pending.put(id, f);
        try {
            IOException dead = failure;
            if (dead != null) throw new IOException("QMP connection lost: " + dead.getMessage(), dead);
            byte[] bytes = (JSON.writeValueAsString(msg) + "\n").getBytes(StandardCharsets.UTF_8);
            synchronized (writeLock) {
                ByteBuffer b = ByteBuffer.wrap(bytes);
                while (b.hasRemaining()) channel.write(b);
            }
            JsonNode resp = f.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
            JsonNode err = resp.get("error");
            if (err != null) throw new QmpException(err.path("class").asString(""), err.path("desc").asString(""));
            return resp.get("return");
        } catch (TimeoutException e) {
            throw new IOException("QMP " + command + " timed out after " + timeout.toMillis() + " ms");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted during QMP " + command);
        } catch (ExecutionException e) {
            throw new IOException("QMP " + command + " failed: " + e.getCause().getMessage(), e.getCause());
        } finally {
            pending.remove(id);
        }
    }

    JsonNode execute(String command) throws IOException { return execute(command, null, Duration.ofSeconds(30)); }

    private void readLoop() {
        ByteBuffer buf = ByteBuffer.allocate(64 * 1024);
        ByteArrayOutputStream line = new ByteArrayOutputStream();
        try {
            while (true) {
                buf.clear();
                int n = channel.read(buf);
                if (n < 0) throw new IOException("QMP socket closed by QEMU");
                buf.flip();
                while (buf.hasRemaining()) {
                    byte b = buf.get();
                    if (b == '\n') {
                        dispatch(line.toByteArray());
                        line.reset();
                    } else {
                        if (line.size() >= MAX_LINE) throw new IOException("QMP line longer than " + MAX_LINE + " bytes");
                        line.write(b);
                    }
                }
            }
        } catch (Exception e) {
            IOException io = e instanceof IOException x ? x : new IOException(e.toString(), e);
            failure = io;
            greeting.completeExceptionally(io);
            for (CompletableFuture<JsonNode> f : new ArrayList<>(pending.values())) f.completeExceptionally(io);
            closeChannel();
        }
    }

    private void dispatch(byte[] bytes) {
        String s = new String(bytes, StandardCharsets.UTF_8).strip();
        if (s.isEmpty()) return;
        JsonNode node = JSON.readTree(s);
        if (node.has("QMP")) { greeting.complete(node); return; }
        if (node.has("event")) {
            for (Consumer<JsonNode> l : eventListeners) {
                try { l.accept(node); } catch (RuntimeException ignored) { /* a listener must not kill the reader */ }
            }
            return;
        }
        JsonNode id = node.get("id");
        if (id != null) {
            CompletableFuture<JsonNode> f = pending.get(id.asString(""));
            if (f != null) f.complete(node);
        }
    }

    boolean isOpen() { return failure == null && channel.isOpen(); }

    private void closeChannel() {
        try { channel.close(); } catch (IOException ignored) { }
    }

    @Override
    public void close() {
        if (failure == null) failure = new IOException("QMP client closed");
        closeChannel();
    }

    /**
     * The pause between two checks of a bounded poll on QEMU, for what it announces nowhere: a socket it has yet to
     * create or listen on, block jobs it reports only when asked. Each caller holds a deadline and names what it
     * waited for when it passes. Interrupted, it returns at once with the interrupt flag set.
     */
    static void pollPause(long ms) {
        try { Thread.sleep(ms); } catch (InterruptedException e) { Thread.currentThread().interrupt(); }
    }
}
