package dev.berth.engine.contract;

import dev.berth.engine.Engine;
import dev.berth.engine.api.PortExposure;
import dev.berth.engine.Ports;
import dev.berth.engine.agent.PortStream;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/** One HTTP/1.0 exchange with an app inside a workspace over an exposure's port stream (any level). Stateless. */
public final class PortClient {
    /** A sink that drops everything: for connections that are only held open or expected to be refused. */
    public static final PortStream.Sink NOTHING = new PortStream.Sink() {
        @Override public void onData(ByteBuffer data) { }
        @Override public void onClose() { }
        @Override public void onReset(String reason) { }
    };

    private PortClient() {}

    /** Sends {@code GET path} with the given Host and returns the whole answer, once the app closed (up to 120 s). */
    public static String get(Engine engine, PortExposure e, String host, String path) throws Exception {
        ByteArrayOutputStream got = new ByteArrayOutputStream();
        CompletableFuture<Void> closed = new CompletableFuture<>();
        PortStream[] stream = new PortStream[1];
        PortStream.Sink sink = new PortStream.Sink() {
            @Override public void onData(ByteBuffer data) {
                synchronized (got) {
                    int n = data.remaining();
                    byte[] b = new byte[n];
                    data.get(b);
                    got.writeBytes(b);
                    if (stream[0] != null) stream[0].consumed(n);
                }
            }
            @Override public void onClose() { closed.complete(null); }
            @Override public void onReset(String reason) { closed.completeExceptionally(new AssertionError("reset: " + reason)); }
        };
        try (Ports.Connection c = engine.ports().connect(e, sink)) {
            synchronized (got) {
                stream[0] = c.stream();
                if (got.size() > 0) c.stream().consumed(got.size());
            }
            c.stream().write(ByteBuffer.wrap(("GET " + path + " HTTP/1.0\r\nHost: " + host + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII)));
            closed.get(120, TimeUnit.SECONDS);
            c.stream().shutdownOutput();
        }
        return got.toString(StandardCharsets.UTF_8);
    }
}
