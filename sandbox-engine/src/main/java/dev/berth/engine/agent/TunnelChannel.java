package dev.berth.engine.agent;

import java.util.concurrent.Executor;

/**
 * Host side of one agent-opened egress tunnel: a {@link StreamChannel} with the {@link Tunnel#WINDOW} credit when
 * the agent announced {@code CAP_TUNNEL_WINDOW}, without flow control otherwise. The sink is set once the tunnel
 * handler accepted it.
 */
final class TunnelChannel extends StreamChannel implements Tunnel {
    private final int port;
    private final int exec;

    TunnelChannel(AgentClient client, Executor writer, int chan, int port, int exec, boolean windowed) {
        super(client, writer, chan, windowed ? WINDOW : 0, null);
        this.port = port;
        this.exec = exec;
    }

    @Override
    public int port() { return port; }

    @Override
    public int execChannel() { return exec; }

    @Override
    public boolean flowControlled() { return window > 0; }

    @Override
    String kind() { return "tunnel"; }

    @Override
    void forget() { client.forgetTunnel(chan); }
}
