package dev.berth.engine.agent;

import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.concurrent.Executor;

/**
 * Host side of one byte stream carried on an agent channel: an inbound port stream ({@link PortChannel}) or an egress
 * tunnel ({@link TunnelChannel}). Frames arrive on the reader thread ({@link #onStreamFrame}); DATA, CLOSE, WINDOW
 * and RESET go out through one writer thread per client, so per-stream order holds and the reader never blocks.
 *
 * <p>Flow control (agent protocol, "Flow control"): with a {@code window} each side may have at most that many DATA
 * bytes in flight that the other has not returned with WINDOW. {@link #write} queues what does not fit and returns
 * false; the sink hears {@link StreamSink#onWritable()} once the queue has drained. The agent's DATA is credited back
 * only when the sink says it {@link #consumed} it. A window of 0 is the old behaviour of tunnels to an agent without
 * {@code CAP_TUNNEL_WINDOW}: no WINDOW frames, everything sent at once.
 */
abstract class StreamChannel {
    final AgentClient client;
    private final Executor writer;
    final int chan;
    /** Credit per direction in bytes; 0: none (no flow control). */
    final int window;
    volatile StreamSink sink;

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

    StreamChannel(AgentClient client, Executor writer, int chan, int window, StreamSink sink) {
        this.client = client;
        this.writer = writer;
        this.chan = chan;
        this.window = window;
        this.sink = sink;
    }

    /** What the protocol calls this stream in messages ("port channel", "tunnel"). */
    abstract String kind();

    /** Removes this channel from the client's table (its id may be reused). */
    abstract void forget();

    private void submit(Runnable r) {
        try {
            writer.execute(r);
        } catch (java.util.concurrent.RejectedExecutionException e) {
            // client closed: the sink was told through onReset
        }
    }

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

    /**
     * Whether nothing waits for the agent's credit: false from a {@link #write} that returned false until just before
     * {@link StreamSink#onWritable()}. Lets a caller that reacts to a refused write see a drain it raced with.
     */
    public synchronized boolean writable() {
        return queued == 0;
    }

    /** Sends queued bytes as far as the agent's credit allows, then a queued CLOSE. Holds the lock. */
    private void pump() {
        while (!queue.isEmpty() && (window == 0 || inflight < window)) {
            byte[] head = queue.peek();
            int n = Math.min(head.length, window == 0 ? Protocol.MAX_PAYLOAD : Math.min(Protocol.MAX_PAYLOAD, window - inflight));
            byte[] part;
            if (n == head.length) {
                part = queue.poll();
            } else {
                part = java.util.Arrays.copyOfRange(head, 0, n);
                queue.poll();
                queue.addFirst(java.util.Arrays.copyOfRange(head, n, head.length));
            }
            queued -= n;
            if (window > 0) inflight += n;
            submit(() -> client.sendQuietly(Protocol.DATA, chan, part, 0, part.length));
        }
        if (queue.isEmpty() && closeQueued && !localClosed) {
            localClosed = true;
            submit(() -> client.sendQuietly(Protocol.CLOSE, chan, new byte[0], 0, 0));
            if (remoteClosed) finish();
        }
    }

    public void shutdownOutput() {
        synchronized (this) {
            if (done || closeQueued) return;
            closeQueued = true;
            pump();
        }
    }

    public void reset(String reason) {
        synchronized (this) {
            if (done) return;
            done = true;
            queue.clear();
            queued = 0;
        }
        forget();
        byte[] p = new PayloadWriter().str(reason).toBytes();
        submit(() -> client.sendQuietly(Protocol.RESET, chan, p, 0, p.length));
    }

    public void consumed(int bytes) {
        if (bytes <= 0 || window == 0) return;
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
        forget();
    }

    /**
     * DATA, WINDOW, CLOSE, RESET or ERROR from the agent on this stream (reader thread). Returns true when the
     * channel is finished (its id free).
     */
    boolean onStreamFrame(Frame f) throws ProtocolException {
        PayloadReader r = new PayloadReader(f);
        switch (f.type()) {
            case Protocol.DATA -> {
                byte[] data = r.rest();
                synchronized (this) {
                    if (done) return false;
                    if (remoteClosed) throw new ProtocolException("DATA after CLOSE on " + kind() + " " + chan);
                    received += data.length;
                    if (window > 0 && received - granted > window) {
                        throw new ProtocolException("agent sent " + (received - granted) + " unacknowledged bytes on " + kind() + " " + chan
                                + ", more than its WINDOW " + window);
                    }
                }
                sink.onData(ByteBuffer.wrap(data));
                return false;
            }
            case Protocol.WINDOW -> {
                long n = r.u32();
                r.end();
                boolean wake;
                synchronized (this) {
                    if (window == 0) throw new ProtocolException("WINDOW on " + kind() + " " + chan + ", which has no flow control");
                    if (done) return false;
                    if (n == 0 || n > inflight) throw new ProtocolException("WINDOW " + n + " on " + kind() + " " + chan + " with " + inflight + " bytes in flight");
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
                String reason = f.type() == Protocol.RESET ? r.str() : AgentClient.errorOf(f, kind()).getMessage();
                remoteReset(reason);
                return true;
            }
            default -> throw new ProtocolException("unexpected " + f + " on " + kind() + " " + chan);
        }
    }

    /** RESET from the agent or loss of the connection: no more frames either way. */
    void remoteReset(String reason) {
        synchronized (this) {
            if (done) return;
            done = true;
            queue.clear();
            queued = 0;
        }
        if (resetBeforeSink(reason)) return;
        StreamSink s = sink;
        if (s != null) s.onReset(reason);
    }

    /** A subclass that reports this reset elsewhere (a port stream not yet opened) returns true. */
    boolean resetBeforeSink(String reason) {
        return false;
    }
}
