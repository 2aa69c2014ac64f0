package dev.berth.engine.agent;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;

/**
 * Host side of one PORT_OPEN channel: a {@link StreamChannel} with the {@link PortStream#WINDOW} credit, opened by
 * PORT_OPENED (or refused by ERROR) before any stream frame.
 */
final class PortChannel extends StreamChannel implements PortStream {
    private final int port;
    final CompletableFuture<Void> opened = new CompletableFuture<>();

    PortChannel(AgentClient client, Executor writer, int chan, int port, Sink sink) {
        super(client, writer, chan, WINDOW, sink);
        this.port = port;
    }

    @Override
    public int port() { return port; }

    @Override
    String kind() { return "port channel"; }

    @Override
    void forget() { client.forgetPort(chan, this); }

    /** One frame from the agent on this channel (reader thread). Returns true when the channel is finished. */
    boolean onFrame(Frame f) throws ProtocolException {
        if (opened.isDone()) return onStreamFrame(f);
        PayloadReader r = new PayloadReader(f);
        switch (f.type()) {
            case Protocol.PORT_OPENED -> {
                r.end();
                opened.complete(null);
                return false;
            }
            case Protocol.ERROR -> {
                opened.completeExceptionally(AgentClient.errorOf(f, "PORT_OPEN 127.0.0.1:" + port));
                remoteReset("refused"); // marks it done; the opener hears the ERROR above, the sink nothing
                return true;
            }
            default -> throw new ProtocolException("unexpected " + f + " on port channel " + chan + " before PORT_OPENED");
        }
    }

    /** Before PORT_OPENED a reset is the opener's failure (openPort throws it), not the sink's. */
    @Override
    boolean resetBeforeSink(String reason) {
        return opened.completeExceptionally(new AgentException("PORT_OPEN 127.0.0.1:" + port + ": " + reason, null)) || opened.isCompletedExceptionally();
    }
}
