package dev.berth.engine.agent;

import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;

/**
 * Host side of one PORT_OPEN channel. Frames arrive on the reader thread ({@link #onFrame}); DATA, CLOSE, WINDOW
 * and RESET go out through the client's port writer (one thread, so per-stream order holds and the reader never
 * blocks on the stream).
 */
final class PortChannel implements PortStream {
    private final AgentClient client;
    private final Executor writer;
    final int chan;
    private final int port;
    private final Sink sink;
    final CompletableFuture<Void> opened = new CompletableFuture<>();

    // guarded by this
    private final ArrayDeque<byte[]> queue = new ArrayDeque<>();
    private long queued;
    private int inflight;          // DATA bytes sent to the agent, not yet returned by its WINDOW
    private long received;         // DATA bytes from the agent
    private long granted;          // of those, returned to the agent by our WINDOW
    private boolean blocked;       // write() returned false: tell the sink onWritable once drained
    private boolean closeQueued;
    private boolean localClosed;   // CLOSE sent
    private boolean remoteClosed;  // CLOSE received
    private boolean done;

    PortChannel(AgentClient client, Executor writer, int chan, int port, Sink sink) {
        this.client = client;
        this.writer = writer;
        this.chan = chan;
        this.port = port;
        this.sink = sink;
    }

    @Override
    public int port() { return port; }

    private void submit(Runnable r) {
        try {
            writer.execute(r);
        } catch (java.util.concurrent.RejectedExecutionException e) {
            // client closed: the sink was told through onReset
        }
    }

    @Override
    public boolean write(ByteBuffer data) {
        if (!data.hasRemaining()) return true;
        byte[] copy = new byte[data.remaining()];
        data.get(copy);
        synchronized (this) {
            if (done || closeQueued) return true; // bytes for a dead stream go nowhere, like a closed socket
            queue.add(copy);
            queued += copy.length;
            pump();
            if (queued > 0) blocked = true;
            return queued == 0;
        }
    }

    /** Sends queued bytes as far as the agent's credit allows, then a queued CLOSE. Holds the lock. */
    private void pump() {
        while (!queue.isEmpty() && inflight < WINDOW) {
            byte[] head = queue.peek();
            int n = Math.min(head.length, WINDOW - inflight);
            byte[] part;
            if (n == head.length) {
                part = queue.poll();
            } else {
                part = java.util.Arrays.copyOfRange(head, 0, n);
                queue.poll();
                queue.addFirst(java.util.Arrays.copyOfRange(head, n, head.length));
            }
            queued -= n;
            inflight += n;
            submit(() -> client.sendQuietly(Protocol.DATA, chan, part, 0, part.length));
        }
        if (queue.isEmpty() && closeQueued && !localClosed) {
            localClosed = true;
            submit(() -> client.sendQuietly(Protocol.CLOSE, chan, new byte[0], 0, 0));
            if (remoteClosed) finish();
        }
    }

    @Override
    public void shutdownOutput() {
        synchronized (this) {
            if (done || closeQueued) return;
            closeQueued = true;
            pump();
        }
    }

    @Override
    public void reset(String reason) {
        synchronized (this) {
            if (done) return;
            done = true;
            queue.clear();
            queued = 0;
        }
        client.forgetPort(chan, this);
        byte[] p = new PayloadWriter().str(reason).toBytes();
        submit(() -> client.sendQuietly(Protocol.RESET, chan, p, 0, p.length));
    }

    @Override
    public void consumed(int bytes) {
        if (bytes <= 0) return;
        synchronized (this) {
            if (done || remoteClosed && granted + bytes > received) return;
            if (granted + bytes > received) throw new IllegalArgumentException("consumed " + bytes + " bytes, only " + (received - granted) + " unacknowledged");
            granted += bytes;
        }
        byte[] p = new PayloadWriter().u32(bytes).toBytes();
        submit(() -> client.sendQuietly(Protocol.WINDOW, chan, p, 0, p.length));
    }

    private void finish() {
        done = true;
        client.forgetPort(chan, this);
    }

    /** One frame from the agent on this channel (reader thread). Returns true when the channel is finished. */
    boolean onFrame(Frame f) throws ProtocolException {
        PayloadReader r = new PayloadReader(f);
        if (!opened.isDone()) {
            switch (f.type()) {
                case Protocol.PORT_OPENED -> {
                    r.end();
                    opened.complete(null);
                    return false;
                }
                case Protocol.ERROR -> {
                    opened.completeExceptionally(AgentClient.errorOf(f, "PORT_OPEN 127.0.0.1:" + port));
                    synchronized (this) { done = true; }
                    return true;
                }
                default -> throw new ProtocolException("unexpected " + f + " on port channel " + chan + " before PORT_OPENED");
            }
        }
        switch (f.type()) {
            case Protocol.DATA -> {
                byte[] data = r.rest();
                synchronized (this) {
                    if (done) return false;
                    if (remoteClosed) throw new ProtocolException("DATA after CLOSE on port channel " + chan);
                    received += data.length;
                    if (received - granted > WINDOW) throw new ProtocolException("agent sent " + (received - granted) + " unacknowledged bytes on port channel " + chan + ", more than its WINDOW " + WINDOW);
                }
                sink.onData(ByteBuffer.wrap(data));
                return false;
            }
            case Protocol.WINDOW -> {
                long n = r.u32();
                r.end();
                boolean wake;
                synchronized (this) {
                    if (done) return false;
                    if (n == 0 || n > inflight) throw new ProtocolException("WINDOW " + n + " on port channel " + chan + " with " + inflight + " bytes in flight");
                    inflight -= (int) n;
                    pump();
                    wake = blocked && queued == 0;
                    if (wake) blocked = false;
                }
                if (wake) sink.onWritable();
                return false;
            }
            case Protocol.CLOSE -> {
                r.end();
                boolean fin;
                synchronized (this) {
                    if (done) return false;
                    remoteClosed = true;
                    fin = localClosed;
                    if (fin) finish();
                }
                sink.onClose();
                return fin;
            }
            case Protocol.RESET, Protocol.ERROR -> {
                String reason = f.type() == Protocol.RESET ? r.str() : AgentClient.errorOf(f, "port stream").getMessage();
                remoteReset(reason);
                return true;
            }
            default -> throw new ProtocolException("unexpected " + f + " on port channel " + chan);
        }
    }

    /** RESET from the agent or loss of the connection. */
    void remoteReset(String reason) {
        synchronized (this) {
            if (done) return;
            done = true;
            queue.clear();
            queued = 0;
        }
        if (opened.completeExceptionally(new AgentException("PORT_OPEN 127.0.0.1:" + port + ": " + reason, null))) return; // openPort throws it
        sink.onReset(reason);
    }
}
