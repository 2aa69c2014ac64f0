package dev.berth.engine.agent;

import java.nio.ByteBuffer;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/** Agent-opened channels (egress tunnels) of one client: TUNNEL_OPEN, DATA, CLOSE, RESET from the agent. */
final class TunnelRouter {
    private static final System.Logger LOG = System.getLogger(TunnelRouter.class.getName());

    private final AgentClient client;
    private final Map<Integer, TunnelChannel> tunnels = new ConcurrentHashMap<>();
    /** Sinks call Tunnel methods on the reader thread; this thread does the (possibly blocking) writing, in order. */
    private final ExecutorService writer = Executors.newSingleThreadExecutor(Thread.ofVirtual().name("berth-agent-tunnel-writer").factory());
    private volatile TunnelHandler handler;

    TunnelRouter(AgentClient client) { this.client = client; }

    void setHandler(TunnelHandler handler) { this.handler = handler; }

    /** Protocol version the agent announced (1: TUNNEL_OPEN carries no exec). Set on the reader thread at HELLO. */
    private int agentVersion = Protocol.VERSION;
    /** Whether the agent announced CAP_TUNNEL_WINDOW (tunnels are flow controlled). Set with agentVersion. */
    private boolean windows;

    /** The agent's HELLO (reader thread, before any TUNNEL_OPEN of the session). */
    void agentHello(int version, int caps) {
        this.agentVersion = version;
        this.windows = (caps & Protocol.CAP_TUNNEL_WINDOW) != 0;
    }

    void forget(int chan) { tunnels.remove(chan); }

    /** One frame on an agent channel (reader thread). */
    void dispatch(Frame f) throws ProtocolException {
        int chan = f.chan();
        PayloadReader r = new PayloadReader(f);
        if (f.type() == Protocol.TUNNEL_OPEN) {
            int port = r.u16();
            int exec = agentVersion >= 2 ? r.i32() : 0;
            r.end();
            open(chan, port, exec);
            return;
        }
        TunnelChannel t = tunnels.get(chan);
        if (t == null) {
            if (f.type() == Protocol.DATA || f.type() == Protocol.CLOSE || f.type() == Protocol.RESET || f.type() == Protocol.ERROR
                    || f.type() == Protocol.WINDOW) return; // crossed our RESET
            throw new ProtocolException("unexpected " + f + " on tunnel channel");
        }
        try {
            if (t.onStreamFrame(f)) tunnels.remove(chan, t);
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "tunnel sink failed on " + f + "; resetting the tunnel", e);
            t.reset("host-side tunnel sink failed");
        }
    }

    private void open(int chan, int port, int exec) throws ProtocolException {
        TunnelChannel t = new TunnelChannel(client, writer, chan, port, exec, windows);
        if (tunnels.putIfAbsent(chan, t) != null) throw new ProtocolException("TUNNEL_OPEN on channel 0x" + Integer.toHexString(chan) + " already open");
        TunnelHandler h = handler;
        StreamSink sink = null;
        try {
            if (h != null) sink = h.onOpen(t);
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "tunnel handler failed", e);
        }
        if (sink == null) {
            t.reset(h == null ? "no tunnel handler on the host" : "tunnel refused by the host");
            return;
        }
        t.sink = sink;
    }

    /** The connection is gone: every open tunnel is reset. */
    void closeAll(String reason) {
        for (TunnelChannel t : tunnels.values()) {
            try {
                t.remoteReset(reason);
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "tunnel sink failed on reset", e);
            }
        }
        tunnels.clear();
        writer.shutdown();
    }
}
