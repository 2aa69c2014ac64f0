package dev.berth.mcp.stdio;

import dev.berth.mcp.jsonrpc.ErrorReplies;
import dev.berth.mcp.jsonrpc.LineReader;
import dev.berth.mcp.jsonrpc.MessageCheck;
import dev.berth.mcp.jsonrpc.Refusal;
import dev.berth.mcp.jsonrpc.WireLimits;
import io.modelcontextprotocol.json.McpJsonMapper;
import io.modelcontextprotocol.json.TypeRef;
import io.modelcontextprotocol.spec.McpSchema;
import io.modelcontextprotocol.spec.McpSchema.JSONRPCMessage;
import io.modelcontextprotocol.spec.McpServerSession;
import io.modelcontextprotocol.spec.McpServerTransport;
import io.modelcontextprotocol.spec.McpServerTransportProvider;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import dev.berth.engine.metrics.CallPhases;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import reactor.core.publisher.Mono;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * MCP over stdin/stdout for one client, in place of the SDK's stdio transport (which stops reading for good after
 * the first line it cannot parse). Every line is checked by {@link MessageCheck} before the SDK sees it; a refused
 * line is answered with a JSON-RPC error and reading goes on. Lines longer than {@link WireLimits#MAX_MESSAGE_BYTES}
 * are read to their end, discarded and refused. Replies are reworded by {@link ErrorReplies}; a reply larger than
 * {@link WireLimits#MAX_OUTBOUND_BYTES} is replaced by an error naming its size.
 *
 * <p>Implementation notes: one platform thread reads stdin and hands each message to the SDK session in order
 * (subscribing to {@code session.handle}, which runs tool calls on the SDK's own schedulers); writers serialize on
 * the output stream, one line per message. The session is told nothing about refused lines. Requests are refused
 * until {@code initialize} has been seen (the SDK would park them forever), except {@code ping}, which is answered
 * here. A request id still in flight may not be reused. At end of input {@code onEof} runs once.
 */
public final class StdioTransport implements McpServerTransportProvider {
    private static final System.Logger LOG = System.getLogger("berth.stdio");
    private static final JsonMapper TREE = JsonMapper.builder().build();

    private final McpJsonMapper json;
    private final InputStream in;
    private final OutputStream out;
    private final Runnable onEof;
    private final AtomicBoolean closing = new AtomicBoolean();
    /** Requests the SDK has not answered yet: id (Long or String) to method. */
    private final Map<Object, String> inFlight = new ConcurrentHashMap<>();
    /** When each request in flight was read (only while call phases are recorded: {@code -Dberth.phases}). */
    private final Map<Object, Long> readAt = new ConcurrentHashMap<>();
    /** When the reader took the line it is dispatching (reader thread only). */
    private long lastRead;
    private volatile boolean initializeSeen;
    private volatile McpServerSession session;

    public StdioTransport(McpJsonMapper json, InputStream in, OutputStream out, Runnable onEof) {
        this.json = json;
        this.in = in;
        this.out = out;
        this.onEof = onEof;
    }

    @Override
    public void setSessionFactory(McpServerSession.Factory factory) {
        session = factory.create(new SessionTransport());
        Thread reader = new Thread(this::readLoop, "berth-stdio-in");
        reader.setDaemon(true);
        reader.start();
    }

    private void readLoop() {
        LineReader lines = new LineReader(in, WireLimits.MAX_MESSAGE_BYTES);
        try {
            LineReader.Line line;
            while ((line = lines.next()) != null) {
                if (line.tooLarge()) {
                    reply(Refusal.errorJson(line.id(), Refusal.INVALID_REQUEST, "message of " + line.oversize()
                            + " bytes refused: at most " + WireLimits.MAX_MESSAGE_BYTES + " bytes per message (for larger files,"
                            + " write_file with append: true in parts)"));
                } else if (!blank(line)) {
                    lastRead = System.nanoTime();
                    MessageCheck.Result checked = MessageCheck.check(line.bytes(), line.length());
                    try {
                        dispatch(checked);
                    } catch (RuntimeException e) {
                        // one message the SDK chokes on must not stop the reading of the next
                        LOG.log(System.Logger.Level.ERROR, "handing a message to the SDK failed", e);
                        if (checked instanceof MessageCheck.Accepted a && a.isRequest()) {
                            inFlight.remove(a.id());
                            reply(Refusal.errorJson(a.id(), Refusal.INTERNAL_ERROR, "internal error while handling '" + a.method()
                                    + "'; the server log has the details"));
                        }
                    }
                }
            }
        } catch (IOException e) {
            LOG.log(System.Logger.Level.INFO, "stdin unreadable, treating it as closed: " + e.getMessage());
        } catch (RuntimeException | Error e) {
            LOG.log(System.Logger.Level.ERROR, "stdio reader failed; closing", e);
        } finally {
            closing.set(true);
            onEof.run();
        }
    }

    private static boolean blank(LineReader.Line l) {
        for (int i = 0; i < l.length(); i++) {
            byte b = l.bytes()[i];
            if (b != ' ' && b != '\t' && b != '\r') return false;
        }
        return true;
    }

    private void dispatch(MessageCheck.Result result) {
        switch (result) {
            case Refusal r -> {
                if (r.answer()) reply(r.toJson());
                else LOG.log(System.Logger.Level.INFO, "ignored a message: " + r.reason());
            }
            case MessageCheck.Accepted a when MessageCheck.ignored(a) -> LOG.log(System.Logger.Level.DEBUG, "ignored " + a.method());
            case MessageCheck.Accepted a -> {
                if (a.isRequest()) {
                    if (!initializeSeen && !"initialize".equals(a.method())) {
                        reply("ping".equals(a.method()) ? "{\"jsonrpc\":\"2.0\",\"id\":" + TREE.writeValueAsString(a.id()) + ",\"result\":{}}"
                                : Refusal.errorJson(a.id(), Refusal.INVALID_REQUEST, "the session is not initialized: send initialize first"));
                        return;
                    }
                    if (inFlight.putIfAbsent(a.id(), a.method()) != null) {
                        reply(Refusal.errorJson(a.id(), Refusal.INVALID_REQUEST, "request id " + TREE.writeValueAsString(a.id())
                                + " is still in flight; give each request its own id"));
                        return;
                    }
                    if ("initialize".equals(a.method())) initializeSeen = true;
                    if (CallPhases.enabled()) {
                        readAt.put(a.id(), lastRead);
                        CallPhases.read(lastRead);
                    }
                }
                JSONRPCMessage m = toSdk(a);
                session.handle(m).subscribe(null, e -> LOG.log(System.Logger.Level.WARNING, "handling '" + a.method() + "' failed: " + e));
            }
        }
    }

    @SuppressWarnings("unchecked")
    private static JSONRPCMessage toSdk(MessageCheck.Accepted a) {
        JsonNode m = a.message();
        if (a.isResponse()) {
            JsonNode err = m.get("error");
            McpSchema.JSONRPCResponse.JSONRPCError e = err == null || !err.isObject() ? null
                    : new McpSchema.JSONRPCResponse.JSONRPCError(err.path("code").asInt(), err.path("message").asString(""), null);
            return new McpSchema.JSONRPCResponse("2.0", a.id(), m.has("result") ? TREE.convertValue(m.get("result"), Object.class) : null, e);
        }
        Object params = m.has("params") ? TREE.convertValue(m.get("params"), Map.class) : null;
        return a.isRequest() ? new McpSchema.JSONRPCRequest("2.0", a.method(), a.id(), params)
                : new McpSchema.JSONRPCNotification("2.0", a.method(), params);
    }

    /** Writes one line; never throws (a closed stdout means the client is gone, and stdin's EOF follows). */
    private void reply(String jsonLine) {
        byte[] b = (jsonLine + "\n").getBytes(StandardCharsets.UTF_8);
        synchronized (out) {
            try {
                out.write(b);
                out.flush();
            } catch (IOException e) {
                LOG.log(System.Logger.Level.DEBUG, "stdout closed: " + e.getMessage());
            }
        }
    }

    private String serialize(JSONRPCMessage message) {
        if (message instanceof McpSchema.JSONRPCResponse r) {
            String method = r.id() == null ? null : inFlight.remove(r.id());
            McpSchema.JSONRPCResponse clean = ErrorReplies.clean(r, method);
            String s = write(clean);
            if (s.length() > WireLimits.MAX_OUTBOUND_BYTES) { // chars <= bytes: a cheap first test
                int bytes = s.getBytes(StandardCharsets.UTF_8).length;
                if (bytes > WireLimits.MAX_OUTBOUND_BYTES) {
                    LOG.log(System.Logger.Level.WARNING, "reply to '" + method + "' of " + bytes + " bytes replaced by an error");
                    return Refusal.errorJson(r.id(), Refusal.INTERNAL_ERROR, "the result of '" + method + "' would be " + bytes
                            + " bytes, over the " + WireLimits.MAX_OUTBOUND_BYTES + "-byte message limit; ask for less (smaller max_bytes or max_output_bytes)");
                }
            }
            return s;
        }
        return write(message);
    }

    private String write(Object m) {
        try {
            return json.writeValueAsString(m);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    @Override
    public Mono<Void> notifyClients(String method, Object params) {
        McpServerSession s = session;
        return s == null ? Mono.empty() : s.sendNotification(method, params);
    }

    @Override
    public Mono<Void> notifyClient(String sessionId, String method, Object params) {
        return notifyClients(method, params);
    }

    @Override
    public Mono<Void> closeGracefully() {
        return Mono.fromRunnable(() -> closing.set(true));
    }

    /** The one session's view of the transport: messages out as lines, params converted with the SDK's mapper. */
    private final class SessionTransport implements McpServerTransport {
        @Override
        public Mono<Void> sendMessage(JSONRPCMessage message) {
            return Mono.fromRunnable(() -> {
                if (closing.get() && !(message instanceof McpSchema.JSONRPCResponse)) return;
                Long read = message instanceof McpSchema.JSONRPCResponse r && r.id() != null && CallPhases.enabled() ? readAt.remove(r.id()) : null;
                String method = read == null ? null : inFlight.get(((McpSchema.JSONRPCResponse) message).id());
                reply(serialize(message));
                if (read != null) CallPhases.server(method, System.nanoTime() - read);
            });
        }

        @Override
        public <T> T unmarshalFrom(Object data, TypeRef<T> typeRef) {
            return json.convertValue(data, typeRef);
        }

        @Override
        public Mono<Void> closeGracefully() {
            return Mono.fromRunnable(() -> closing.set(true));
        }

        @Override
        public void close() {
            closing.set(true);
        }
    }
}
