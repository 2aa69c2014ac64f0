package dev.berth.engine.agent;

import java.nio.ByteBuffer;
import java.util.concurrent.Executor;

/**
 * Host side of one agent-opened tunnel. Writes go through the client's tunnel executor: {@link Tunnel} methods
 * are called from the reader thread (by sinks), which must never block on the stream.
 */
final class TunnelChannel implements Tunnel {
    private final AgentClient client;
    private final Executor writer;
    final int chan;
    private final int port;
    private final int exec;
    volatile Sink sink;
    private boolean localClosed;   // guarded by this
    private boolean remoteClosed;  // guarded by this
    private boolean done;          // guarded by this

    TunnelChannel(AgentClient client, Executor writer, int chan, int port, int exec) {
        this.exec = exec;
        this.client = client;
        this.writer = writer;
        this.chan = chan;
        this.port = port;
    }

    @Override
    public int port() { return port; }

    @Override
    public int execChannel() { return exec; }

    /** The executor is shut down with the client; a write after that is a write to a dead connection: dropped. */
    private void submit(Runnable r) {
        try {
            writer.execute(r);
        } catch (java.util.concurrent.RejectedExecutionException e) {
            // client closed; sinks were told through onReset
        }
    }

    @Override
    public void write(ByteBuffer data) {
        byte[] copy = new byte[data.remaining()];
        data.get(copy);
        synchronized (this) {
            if (done || localClosed || copy.length == 0) return; // bytes for a dead tunnel go nowhere, like a closed socket
        }
        submit(() -> {
            for (int off = 0; off < copy.length; off += Protocol.MAX_PAYLOAD)
                client.sendQuietly(Protocol.DATA, chan, copy, off, Math.min(Protocol.MAX_PAYLOAD, copy.length - off));
        });
    }

    @Override
    public void shutdownOutput() {
        boolean finished;
        synchronized (this) {
            if (done || localClosed) return;
            localClosed = true;
            finished = remoteClosed;
            if (finished) done = true;
        }
        submit(() -> client.sendQuietly(Protocol.CLOSE, chan, new byte[0], 0, 0));
        if (finished) client.forgetTunnel(chan);
    }

    @Override
    public void reset(String reason) {
        synchronized (this) {
            if (done) return;
            done = true;
        }
        client.forgetTunnel(chan);
        byte[] p = new PayloadWriter().str(reason).toBytes();
        submit(() -> client.sendQuietly(Protocol.RESET, chan, p, 0, p.length));
    }

    /** CLOSE from the agent. Returns true when both directions are now closed. */
    boolean remoteClose() {
        synchronized (this) {
            if (remoteClosed) return false;
            remoteClosed = true;
            if (localClosed) done = true;
            return done;
        }
    }

    /** RESET from the agent or loss of the connection: no more frames in either direction. */
    void remoteReset(String reason) {
        synchronized (this) {
            if (done) return;
            done = true;
        }
        Sink s = sink;
        if (s != null) s.onReset(reason);
    }
}
