package dev.berth.mcp.tools;

import io.modelcontextprotocol.common.McpTransportContext;
import io.modelcontextprotocol.json.TypeRef;
import io.modelcontextprotocol.spec.McpSchema;
import io.modelcontextprotocol.spec.McpServerSession;
import io.modelcontextprotocol.spec.McpServerTransport;
import io.modelcontextprotocol.spec.McpServerTransportProvider;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import reactor.core.publisher.Mono;

/**
 * Cancellation for the session-based transports the SDK drives message by message (stdio): wraps the transport
 * provider so that every session it creates is observed. An incoming request gets its cancellation key put into
 * the transport context (where {@link BerthServer} finds it for the tool handler); an incoming
 * {@code notifications/cancelled} cancels the call with that key instead of reaching the SDK, which would only log
 * that it has no handler for it. Everything else is passed to the SDK's own session unchanged.
 */
public final class CancellableSessions implements McpServerTransportProvider {
    private final McpServerTransportProvider delegate;
    private final Cancellations cancellations;
    private final String scope;

    /** @param scope prefix of every key from this provider (the tenant it serves), so keys never collide */
    public CancellableSessions(McpServerTransportProvider delegate, Cancellations cancellations, String scope) {
        this.delegate = delegate;
        this.cancellations = cancellations;
        this.scope = scope;
    }

    @Override
    public void setSessionFactory(McpServerSession.Factory factory) {
        delegate.setSessionFactory(transport -> new Observed(factory.create(transport), transport));
    }

    @Override
    public Mono<Void> notifyClients(String method, Object params) { return delegate.notifyClients(method, params); }

    @Override
    public Mono<Void> notifyClient(String sessionId, String method, Object params) {
        return delegate.notifyClient(sessionId, method, params);
    }

    @Override
    public Mono<Void> closeGracefully() { return delegate.closeGracefully(); }

    @Override
    public void close() { delegate.close(); }

    @Override
    public List<String> protocolVersions() { return delegate.protocolVersions(); }

    private String key(String sessionId, Object requestId) {
        // JSON-RPC ids are numbers or strings; 1 and "1" are different requests
        String id = requestId instanceof Number n ? "n:" + n.longValue() : "s:" + requestId;
        return scope + "|" + sessionId + "|" + id;
    }

    /** The SDK's session with an observer in front of {@link #handle}; every other method is the SDK's own. */
    private final class Observed extends McpServerSession {
        private final McpServerSession inner;

        Observed(McpServerSession inner, McpServerTransport transport) {
            // the superclass state is never used: every public method delegates to the SDK's session
            super(inner.getId(), Duration.ZERO, transport, null, Map.of(), Map.of());
            this.inner = inner;
        }

        @Override
        public Mono<Void> handle(McpSchema.JSONRPCMessage message) {
            if (message instanceof McpSchema.JSONRPCNotification n && "notifications/cancelled".equals(n.method())) {
                if (n.params() instanceof Map<?, ?> p && p.get("requestId") != null) {
                    cancellations.cancel(key(inner.getId(), p.get("requestId")), p.get("reason") == null ? null : String.valueOf(p.get("reason")));
                }
                return Mono.empty();
            }
            if (message instanceof McpSchema.JSONRPCRequest r && r.id() != null) {
                String k = key(inner.getId(), r.id());
                return inner.handle(message).contextWrite(ctx -> {
                    McpTransportContext base = ctx.getOrDefault(McpTransportContext.KEY, McpTransportContext.EMPTY);
                    McpTransportContext withKey = name -> Cancellations.CONTEXT_KEY.equals(name) ? k : base.get(name);
                    return ctx.put(McpTransportContext.KEY, withKey);
                });
            }
            return inner.handle(message);
        }

        @Override public String getId() { return inner.getId(); }
        @Override public void init(McpSchema.ClientCapabilities c, McpSchema.Implementation i) { inner.init(c, i); }
        @Override public void setMinLoggingLevel(McpSchema.LoggingLevel l) { inner.setMinLoggingLevel(l); }
        @Override public boolean isNotificationForLevelAllowed(McpSchema.LoggingLevel l) { return inner.isNotificationForLevelAllowed(l); }
        @Override public <T> Mono<T> sendRequest(String method, Object params, TypeRef<T> type) { return inner.sendRequest(method, params, type); }
        @Override public Mono<Void> sendNotification(String method, Object params) { return inner.sendNotification(method, params); }
        @Override public Mono<Void> closeGracefully() { return inner.closeGracefully(); }
        @Override public void close() { inner.close(); }
    }
}
