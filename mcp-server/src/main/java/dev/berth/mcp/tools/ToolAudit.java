package dev.berth.mcp.tools;

import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.Tenant;
import dev.berth.engine.audit.AuditException;
import dev.berth.engine.audit.AuditTrail;
import dev.berth.engine.audit.Canonical;
import dev.berth.engine.audit.Durability;
import io.modelcontextprotocol.server.McpSyncServerExchange;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * Records every tool call in the caller's audit chain before it runs ({@code tool_call}: the tool, the caller — tenant,
 * transport, session, client — the SHA-256 of the arguments and the arguments that are not secret) and every failed
 * one after ({@code tool_error}). Argument values that may carry secrets are reduced to their size and digest:
 * {@code env} values (names kept), {@code stdin} and file {@code content}. Calls that only read are recorded durably
 * before they run; calls that change something are written before they run and made durable with the engine's record
 * of what they did, which the engine fsyncs before the result is returned. Thread-safe.
 */
final class ToolAudit {
    private static final Set<String> READ_ONLY = Set.of("list_workspaces", "read_file", "list_files");
    private static final int KEPT = 4096;

    private final AuditTrail trail;
    private final String transport;

    ToolAudit(AuditTrail trail, String transport) {
        this.trail = trail;
        this.transport = transport;
    }

    void call(Tenant tenant, String tool, McpSyncServerExchange exchange, Map<String, Object> args) throws EngineException {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("tool", tool);
        m.put("caller", caller(tenant, exchange));
        Object normal = normalize(args == null ? Map.of() : args);
        m.put("arguments_sha256", Canonical.sha256(Canonical.encode(normal)));
        m.put("arguments", redact(normal));
        boolean readOnly = READ_ONLY.contains(tool) || (tool.equals("run") && args != null && args.get("process") != null);
        try {
            trail.record(tenant.id(), "tool_call", m, durability(tool, readOnly));
        } catch (AuditException e) {
            throw new EngineException(EngineException.Kind.UNAVAILABLE, "the audit log cannot be written, so Berth refuses to"
                    + " run " + tool + " unrecorded: " + e.getMessage() + ". The operator must free or fix the disk of the"
                    + " Berth home (or set audit.on_failure to \"continue\")", e);
        }
    }

    /**
     * How far a tool call's record goes before the call proceeds. Read-only calls: durable now (nothing later makes
     * it so). A {@code run}: queued, because the engine writes its {@code run_start} (and with it everything
     * queued, this record included, in one write) before the command starts, and a run refused before that records
     * a durable {@code tool_error}; one write instead of two on the hottest path. Other calls: written now, so a full
     * disk fails them before they change anything.
     */
    static Durability durability(String tool, boolean readOnly) {
        if (readOnly) return Durability.DURABLE;
        return tool.equals("run") ? Durability.QUEUED : Durability.WRITTEN;
    }

    /** A call that failed: durable, so the refusal itself is on record. Never throws (the caller already fails). */
    void error(Tenant tenant, String tool, String message) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("tool", tool);
        m.put("error", message.length() > KEPT ? message.substring(0, KEPT) : message);
        try {
            trail.record(tenant.id(), "tool_error", m, Durability.DURABLE);
        } catch (AuditException e) {
            System.getLogger("berth.audit").log(System.Logger.Level.ERROR, "unrecorded tool_error of " + tool + ": " + e.getMessage());
        }
    }

    private Map<String, Object> caller(Tenant tenant, McpSyncServerExchange exchange) {
        Map<String, Object> c = new LinkedHashMap<>();
        c.put("tenant", tenant.id());
        c.put("transport", transport);
        String session = exchange == null ? null : exchange.sessionId();
        if (session != null) c.put("session", session);
        var info = exchange == null ? null : exchange.getClientInfo();
        if (info != null) c.put("client", info.name() + (info.version() == null ? "" : "/" + info.version()));
        return c;
    }

    /** JSON values as the canonical encoding takes them: non-integral numbers become their decimal text. */
    static Object normalize(Object v) {
        return switch (v) {
            case null -> null;
            case Map<?, ?> m -> {
                Map<String, Object> out = new TreeMap<>();
                m.forEach((k, x) -> out.put(String.valueOf(k), normalize(x)));
                yield out;
            }
            case List<?> l -> l.stream().map(ToolAudit::normalize).toList();
            case Double d when d == Math.rint(d) && !d.isInfinite() && Math.abs(d) < 1e15 -> d.longValue();
            case Number n when !(n instanceof Integer || n instanceof Long || n instanceof Short || n instanceof java.math.BigInteger) -> n.toString();
            default -> v;
        };
    }

    @SuppressWarnings("unchecked")
    private static Object redact(Object normal) {
        if (!(normal instanceof Map<?, ?> map)) return normal;
        Map<String, Object> out = new TreeMap<>();
        for (var e : ((Map<String, Object>) map).entrySet()) {
            Object v = e.getValue();
            switch (e.getKey()) {
                case "env" -> out.put("env_names", v instanceof Map<?, ?> env ? List.copyOf(new TreeMap<>(env).keySet()) : List.of());
                case "stdin", "content" -> out.put(e.getKey(), digestOf(v));
                default -> out.put(e.getKey(), v instanceof String s && s.length() > KEPT ? s.substring(0, KEPT) + "..." : v);
            }
        }
        return out;
    }

    private static Map<String, Object> digestOf(Object v) {
        byte[] b = String.valueOf(v).getBytes(StandardCharsets.UTF_8);
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("bytes", b.length);
        m.put("sha256", Canonical.sha256(b));
        return m;
    }
}
