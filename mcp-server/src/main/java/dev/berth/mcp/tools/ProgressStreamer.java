package dev.berth.mcp.tools;

import dev.berth.engine.api.OutputListener;
import io.modelcontextprotocol.server.McpSyncServerExchange;
import io.modelcontextprotocol.spec.McpSchema;
import java.nio.charset.StandardCharsets;

/**
 * Streams a run's output to the client as MCP progress notifications while the command runs. Output arrives on the
 * agent's reader thread, which must never block, so chunks are buffered here and sent every
 * {@link #PERIOD_MS} ms by a virtual thread. Each notification carries at most {@link #MAX_MESSAGE} characters; what
 * does not fit is counted and said ("[berth: N bytes not streamed]") — the full (bounded) output is in the result.
 * Thread-safe.
 */
final class ProgressStreamer implements OutputListener, AutoCloseable {
    static final int PERIOD_MS = 100;
    static final int MAX_MESSAGE = 16 * 1024;

    private final McpSyncServerExchange exchange;
    private final Object token;
    private final StringBuilder pending = new StringBuilder();
    private long skipped;
    private long sent;
    private boolean closed;
    private final Thread sender;

    ProgressStreamer(McpSyncServerExchange exchange, Object token) {
        this.exchange = exchange;
        this.token = token;
        this.sender = Thread.ofVirtual().name("berth-progress").start(this::loop);
    }

    @Override
    public void onOutput(String stream, byte[] data) {
        synchronized (this) {
            if (pending.length() >= MAX_MESSAGE) {
                skipped += data.length;
                return;
            }
            String s = new String(data, StandardCharsets.UTF_8);
            if (stream.equals("stderr")) s = s.lines().map(l -> "[stderr] " + l).reduce((a, b) -> a + "\n" + b).orElse("") + (s.endsWith("\n") ? "\n" : "");
            int room = MAX_MESSAGE - pending.length();
            if (s.length() > room) {
                skipped += s.length() - room;
                s = s.substring(0, room);
            }
            pending.append(s);
        }
    }

    private void loop() {
        while (true) {
            boolean last;
            synchronized (this) {
                last = closed;
            }
            flush();
            if (last) return;
            try {
                Thread.sleep(PERIOD_MS);
            } catch (InterruptedException e) {
                flush();
                return;
            }
        }
    }

    private void flush() {
        String msg;
        synchronized (this) {
            if (pending.isEmpty() && skipped == 0) return;
            msg = pending.toString();
            if (skipped > 0) msg += "\n[berth: " + skipped + " bytes not streamed; the result has the output's head and tail]\n";
            pending.setLength(0);
            skipped = 0;
            sent += msg.length();
        }
        try {
            exchange.progressNotification(new McpSchema.ProgressNotification(token, (double) sent, null, msg, null));
        } catch (RuntimeException e) {
            // the client went away; the run goes on and its result still reports everything
            System.getLogger("berth.mcp").log(System.Logger.Level.DEBUG, "progress notification not sent: " + e);
        }
    }

    @Override
    public void close() {
        synchronized (this) {
            closed = true;
        }
        try {
            sender.join(2000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
