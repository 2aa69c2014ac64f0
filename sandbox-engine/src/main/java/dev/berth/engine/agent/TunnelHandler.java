package dev.berth.engine.agent;

/** Accepts egress tunnels the agent opens (a process inside connected to the agent's proxy port). */
public interface TunnelHandler {
    /** Called on the reader thread; must not block. Returns the sink for bytes coming from inside the sandbox. */
    Tunnel.Sink onOpen(Tunnel tunnel);
}
