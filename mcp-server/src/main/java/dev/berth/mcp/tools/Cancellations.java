package dev.berth.mcp.tools;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;

/**
 * Makes {@code notifications/cancelled} stop the tool call it names. The SDK (2.1.0) ignores that notification, so
 * the transport layer observes it and calls {@link #cancel}; the call's handler runs inside {@link #run}, which
 * records its thread. Cancelling interrupts that thread, and the engine's runner answers an interrupt by killing the
 * command's whole process tree inside the workspace.
 *
 * <p>A key identifies one call of one client: tenant, transport session and JSON-RPC request id, so a client can
 * cancel only its own calls. A cancellation that arrives before its call has started (they travel on different HTTP
 * requests) is remembered briefly and applied when the call starts.
 */
public final class Cancellations {
    /** Where a transport puts a call's key in the SDK's transport context for {@link #callKey}. */
    public static final String CONTEXT_KEY = "berth.call";
    private static final System.Logger LOG = System.getLogger("berth.cancel");
    private static final int EARLY_MAX = 1024;
    private static final long EARLY_TTL_NANOS = 60_000_000_000L;

    private static final class Running {
        final Thread thread = Thread.currentThread();
        boolean active = true;
    }

    private final Map<String, Running> running = new ConcurrentHashMap<>();
    /** Cancellations for calls not started yet, oldest first, bounded so a client cannot grow it without limit. */
    private final Map<String, Long> early = new LinkedHashMap<>();

    /** The cancellation key the transport gave a tool call, or null when it gave none. */
    public static String callKey(io.modelcontextprotocol.server.McpSyncServerExchange exchange) {
        return exchange.transportContext().get(CONTEXT_KEY) instanceof String k ? k : null;
    }

    /** Runs a call so that {@link #cancel(String)} with the same key interrupts it; a null key runs it plainly. */
    public <T> T run(String key, Supplier<T> call) {
        if (key == null) return call.get();
        Running r = new Running();
        if (running.putIfAbsent(key, r) != null) return call.get(); // a reused request id: leave the first one cancellable
        try {
            if (takeEarly(key)) r.thread.interrupt();
            return call.get();
        } finally {
            synchronized (r) {
                r.active = false;
            }
            running.remove(key, r);
            // the worker thread is pooled: an interrupt meant for this call must not leak into the next one
            Thread.interrupted();
        }
    }

    /** Interrupts the running call with this key; returns whether one was running. */
    public boolean cancel(String key, String reason) {
        Running r = running.get(key);
        if (r != null) {
            synchronized (r) {
                if (r.active) {
                    LOG.log(System.Logger.Level.INFO, "cancelling call " + key + (reason == null ? "" : " (" + reason + ")"));
                    r.thread.interrupt();
                    return true;
                }
            }
            return false;
        }
        synchronized (early) {
            long now = System.nanoTime();
            early.values().removeIf(t -> now - t > EARLY_TTL_NANOS);
            if (early.size() >= EARLY_MAX) early.remove(early.keySet().iterator().next());
            early.put(key, now);
        }
        return false;
    }

    private boolean takeEarly(String key) {
        synchronized (early) {
            Long t = early.remove(key);
            return t != null && System.nanoTime() - t <= EARLY_TTL_NANOS;
        }
    }
}
