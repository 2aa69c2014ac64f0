package dev.berth.mcp.tools;

import dev.berth.engine.Engine;
import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.EngineException.Kind;
import dev.berth.engine.api.OpenRequest;
import dev.berth.engine.api.OutputListener;
import dev.berth.engine.api.RunRequest;
import dev.berth.engine.api.Tenant;
import dev.berth.engine.metrics.CallPhases;
import dev.berth.engine.spi.Resources;
import dev.berth.schemas.ToolCatalog;
import io.modelcontextprotocol.json.McpJsonMapper;
import io.modelcontextprotocol.server.McpServerFeatures.SyncToolSpecification;
import io.modelcontextprotocol.server.McpSyncServerExchange;
import io.modelcontextprotocol.spec.McpSchema;
import io.modelcontextprotocol.spec.McpSchema.CallToolRequest;
import io.modelcontextprotocol.spec.McpSchema.CallToolResult;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * The MCP tool handlers: each turns a tool call into one engine call and the answer into structured content plus
 * its JSON text mirror. Every failure becomes a tool error (isError) whose text says what was wrong and what to do
 * next; nothing here throws to the SDK. Thread-safe (the engine is).
 */
public final class Tools {
    private static final System.Logger LOG = System.getLogger("berth.mcp");
    /** Bytes per stream one read of a background process returns when it names no max_output_bytes. */
    private static final int DEFAULT_PROCESS_READ = dev.berth.schemas.Limits.intValue("run.output_bytes_default");

    private final Engine engine;
    private final McpJsonMapper json;
    private final Function<McpSyncServerExchange, Tenant> tenants;
    private final ToolAudit audit;
    private final EgressApprovalTool approvals;
    private final Map<String, Handler> more;
    private final TransferTools transfers;

    /**
     * @param tenants   who a call is made for: the single local tenant over stdio, the authenticated one over HTTP
     * @param transport how calls arrive ("stdio", "streamable-http", "sse"), recorded as part of the caller
     * @param more      handlers of the catalog's other tools by name (the file tools, which the server wiring owns)
     */
    public Tools(Engine engine, McpJsonMapper json, Function<McpSyncServerExchange, Tenant> tenants, String transport,
                 Map<String, Handler> more) {
        this(engine, json, tenants, transport, more, List.of());
    }

    /** @param projectRoots the operator's project_roots: where from_directory and branch exports may also go */
    public Tools(Engine engine, McpJsonMapper json, Function<McpSyncServerExchange, Tenant> tenants, String transport,
                 Map<String, Handler> more, List<java.nio.file.Path> projectRoots) {
        this.transfers = new TransferTools(engine, projectRoots, transport);
        this.engine = engine;
        this.json = json;
        this.tenants = tenants;
        this.more = Map.copyOf(more);
        this.audit = new ToolAudit(engine.auditTrail(), transport);
        this.approvals = new EgressApprovalTool(engine);
    }

    /** One specification per tool of the catalog; a tool without a handler here or in {@code more} is a bug. */
    public List<SyncToolSpecification> specifications(ToolCatalog catalog) {
        List<SyncToolSpecification> specs = new ArrayList<>();
        for (ToolCatalog.ToolDef def : catalog.tools()) {
            Handler h = switch (def.name()) {
                case "open_workspace" -> this::open;
                case "run" -> this::run;
                case "park" -> (x, a, r) -> Results.park(engine.park(tenants.apply(x), a.requiredString("workspace")));
                case "snapshot" -> (x, a, r) -> snapshot(tenants.apply(x), a);
                case "close_workspace" -> (x, a, r) -> Results.close(engine.closeWorkspace(tenants.apply(x), a.requiredString("workspace"), a.bool("delete", false)));
                case "list_workspaces" -> (x, a, r) -> list(tenants.apply(x));
                case "expose_port" -> (x, a, r) -> expose(tenants.apply(x), a);
                case "request_egress" -> (x, a, r) -> toMap(approvals.request(x, tenants.apply(x), a));
                case "export_changes" -> (x, a, r) -> transfers.export(x, tenants.apply(x), a);
                default -> {
                    Handler other = more.get(def.name());
                    if (other == null) throw new IllegalStateException("tool '" + def.name() + "' is in the catalog but has no handler");
                    yield other;
                }
            };
            specs.add(SyncToolSpecification.builder().tool(tool(def)).callHandler((ex, req) -> call(def.name(), h, ex, req)).build());
        }
        return specs;
    }

    private McpSchema.Tool tool(ToolCatalog.ToolDef def) {
        Map<String, Object> a = def.annotations();
        var ann = new McpSchema.ToolAnnotations((String) a.get("title"), (Boolean) a.get("readOnlyHint"),
                (Boolean) a.get("destructiveHint"), (Boolean) a.get("idempotentHint"), (Boolean) a.get("openWorldHint"), null);
        return McpSchema.Tool.builder().name(def.name()).title(def.title()).description(def.description())
                .inputSchema(json, toJson(def.inputSchema()))
                .outputSchema(def.outputSchema()).annotations(ann).build();
    }

    private String toJson(Object o) {
        try {
            return json.writeValueAsString(o);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /** One tool's handler: the call's arguments in, the structured result out; an engine refusal becomes a tool error. */
    @FunctionalInterface
    public interface Handler {
        Map<String, Object> handle(McpSyncServerExchange exchange, Args args, CallToolRequest request) throws EngineException;
    }

    private CallToolResult call(String tool, Handler h, McpSyncServerExchange exchange, CallToolRequest req) {
        Tenant tenant = null;
        CallPhases.begin(tool);
        try {
            tenant = tenants.apply(exchange);
            // recorded before anything happens: a call that cannot be recorded does not run (audit.on_failure)
            audit.call(tenant, tool, exchange, req.arguments());
            CallPhases.mark("mcp.tool_call_record");
            Map<String, Object> out = h.handle(exchange, new Args(req.arguments()), req);
            CallPhases.mark("mcp.result_map");
            CallToolResult r = CallToolResult.builder().structuredContent(out).addTextContent(Mirror.of(out, this::toJson)).build();
            CallPhases.end("mcp.result_encode");
            return r;
        } catch (EngineException e) {
            if (tenant != null) audit.error(tenant, tool, e.getMessage());
            return error(e.getMessage());
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.ERROR, "tool " + tool + " failed", e);
            return error("internal error in " + tool + ": " + e + "; nothing was changed that the error does not name. "
                    + "If it persists, check the server log");
        }
    }

    private static CallToolResult error(String message) {
        return CallToolResult.builder().isError(true).addTextContent(message).build();
    }

    private Map<String, Object> open(McpSyncServerExchange ex, Args a, CallToolRequest req) throws EngineException {
        Map<String, Object> res = a.object("resources");
        Resources resources = null;
        if (res != null) {
            Args r = new Args(res);
            Resources d = Resources.DEFAULT;
            resources = new Resources(or(r.integer("vcpus"), d.vcpus()), or(r.integer("memory_mib"), d.memoryMiB()),
                    or(r.integer("disk_mib"), d.diskMiB()), or(r.integer("max_pids"), d.maxPids()),
                    new dev.berth.engine.spi.IoLimits(orLong(r.wholeNumber("io_read_bps"), d.io().readBps()), orLong(r.wholeNumber("io_write_bps"), d.io().writeBps()),
                            orLong(r.wholeNumber("io_read_iops"), d.io().readIops()), orLong(r.wholeNumber("io_write_iops"), d.io().writeIops())));
        }
        OpenRequest open = new OpenRequest(a.string("name"), a.string("lifecycle"), a.string("from_snapshot"),
                a.string("isolation"), resources, a.stringList("egress"), a.stringList("secrets"), a.string("image"));
        if (a.string("from_directory") != null) return transfers.open(ex, tenants.apply(ex), a, open);
        if (a.bool("include_ignored", false)) throw new EngineException(Kind.INVALID_ARGUMENT, "include_ignored goes with from_directory");
        Integer count = a.integer("count");
        if (count == null) return Results.open(engine.open(tenants.apply(ex), open));
        return Results.openMany(engine.openMany(tenants.apply(ex), open, count));
    }

    private static int or(Integer v, int d) { return v == null ? d : v; }

    /** Input for a terminal process: text as UTF-8, or base64 for bytes. */
    private static byte[] input(String stdin, String encoding) throws EngineException {
        if (stdin == null) return new byte[0];
        if (encoding == null || encoding.equals("text")) return stdin.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        if (!encoding.equals("base64")) throw new EngineException(Kind.INVALID_ARGUMENT, "stdin_encoding '" + encoding + "' is not text or base64");
        try {
            return java.util.Base64.getDecoder().decode(stdin);
        } catch (IllegalArgumentException e) {
            throw new EngineException(Kind.INVALID_ARGUMENT, "stdin is not valid base64: " + e.getMessage());
        }
    }

    private static long orLong(Long v, long d) { return v == null ? d : v; }

    private Map<String, Object> run(McpSyncServerExchange ex, Args a, CallToolRequest req) throws EngineException {
        String process = a.string("process");
        if (process != null) {
            if (a.string("command") != null) {
                throw new EngineException(Kind.INVALID_ARGUMENT, "give either command (to start something) or process (to follow or stop a background process), not both");
            }
            String stdin = a.string("stdin");
            var resize = a.size("resize");
            boolean eof = a.bool("end_of_input", false);
            if (stdin != null || resize != null || eof) {
                engine.terminal(tenants.apply(ex), a.requiredString("workspace"), process, input(stdin, a.string("stdin_encoding")), eof, resize);
            }
            Integer wait = a.integer("wait_s");
            Integer since = a.integer("since_stdout");
            Integer sinceErr = a.integer("since_stderr");
            Integer max = a.integer("max_output_bytes");
            return Results.process(engine.process(tenants.apply(ex), a.requiredString("workspace"), process,
                    since == null ? null : since.longValue(), sinceErr == null ? null : sinceErr.longValue(),
                    wait == null ? 0 : wait, a.string("signal"), max == null ? DEFAULT_PROCESS_READ : max));
        }
        if (a.string("signal") != null || a.integer("wait_s") != null || a.size("resize") != null || a.bool("end_of_input", false)) {
            throw new EngineException(Kind.INVALID_ARGUMENT, "signal, wait_s, resize and end_of_input go with process (a background process id)");
        }
        if (a.string("stdin_encoding") != null) throw new EngineException(Kind.INVALID_ARGUMENT, "stdin_encoding goes with process (input to a terminal process)");
        var tty = a.size("tty");
        if (tty != null && !a.bool("background", false)) throw new EngineException(Kind.INVALID_ARGUMENT, "tty needs background: true");
        var rr = new RunRequest(a.requiredString("workspace"), a.requiredString("command"), a.string("cwd"),
                a.stringMap("env"), a.integer("timeout_s"), a.string("stdin"), a.integer("max_output_bytes"),
                a.stringList("egress"), a.stringList("secrets"), tty);
        CallPhases.mark("mcp.arguments");
        if (a.bool("background", false)) return Results.process(engine.startBackground(tenants.apply(ex), rr));
        Object token = req.meta() == null ? null : req.meta().get("progressToken");
        Tenant tenant = tenants.apply(ex);
        dev.berth.engine.api.RunResult result;
        if (token == null) {
            result = engine.run(tenant, rr, OutputListener.NONE);
        } else {
            try (ProgressStreamer streamer = new ProgressStreamer(ex, token)) {
                result = engine.run(tenant, rr, streamer);
            }
        }
        Map<String, Object> out = Results.run(result);
        approvals.afterRun(ex, tenant, rr.workspace(), result, out);  // approvable denials: ask the human, or say who could
        return out;
    }

    private Map<String, Object> snapshot(Tenant tenant, Args a) throws EngineException {
        String delete = a.string("delete");
        if (delete == null) return Results.snapshot(engine.snapshot(tenant, a.requiredString("workspace"), a.string("name")));
        if (a.string("workspace") != null || a.string("name") != null) {
            throw new EngineException(Kind.INVALID_ARGUMENT, "give either workspace (to take a snapshot) or delete (to remove one), not both");
        }
        Map<String, Object> m = Results.snapshot(engine.deleteSnapshot(tenant, delete));
        m.put("deleted", true);
        return m;
    }

    /** The result of expose_port (and one entry of a workspace's exposed_ports). */
    record PortResult(@com.fasterxml.jackson.annotation.JsonProperty("workspace") String workspace,
                      @com.fasterxml.jackson.annotation.JsonProperty("port") int port,
                      @com.fasterxml.jackson.annotation.JsonProperty("access") String access,
                      @com.fasterxml.jackson.annotation.JsonProperty("url") String url,
                      @com.fasterxml.jackson.annotation.JsonProperty("expires_at") String expiresAt,
                      @com.fasterxml.jackson.annotation.JsonProperty("closed") boolean closed) {
        static PortResult of(dev.berth.engine.api.PortExposure e, String url, boolean closed) {
            return new PortResult(e.workspace(), e.port(), e.access(), url, e.expiresAt() == null ? null : e.expiresAt().toString(), closed);
        }
    }

    private Map<String, Object> toMap(Object record) {
        try {
            return json.readValue(json.writeValueAsString(record), new io.modelcontextprotocol.json.TypeRef<Map<String, Object>>() {});
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    private Map<String, Object> expose(Tenant tenant, Args a) throws EngineException {
        dev.berth.mcp.preview.PreviewServer previews = dev.berth.mcp.preview.PreviewServer.of(engine);
        String ws = a.requiredString("workspace");
        Integer port = a.integer("port");
        if (port == null) throw new EngineException(Kind.INVALID_ARGUMENT, "port is required: the TCP port the server listens on inside the workspace");
        if (a.bool("close", false)) {
            if (a.string("access") != null || a.integer("ttl_s") != null) {
                throw new EngineException(Kind.INVALID_ARGUMENT, "close: true takes only workspace and port");
            }
            return toMap(PortResult.of(engine.ports().unexpose(tenant, ws, port), null, true));
        }
        if (previews == null) {
            throw new EngineException(Kind.UNAVAILABLE, "this server has no preview listener, so ports cannot be exposed");
        }
        Integer ttl = a.integer("ttl_s");
        var e = engine.ports().expose(tenant, ws, port, a.string("access"), ttl == null ? null : ttl.longValue());
        return toMap(PortResult.of(e, previews.url(e), false));
    }

    private Map<String, Object> list(Tenant tenant) throws EngineException {
        Map<String, Object> m = new LinkedHashMap<>();
        dev.berth.mcp.preview.PreviewServer previews = dev.berth.mcp.preview.PreviewServer.of(engine);
        List<Map<String, Object>> wss = new ArrayList<>();
        for (var info : engine.list(tenant)) {
            Map<String, Object> w = Results.workspace(info);
            if (previews != null && info.state() != dev.berth.engine.api.WorkspaceState.CLOSED) {
                List<Map<String, Object>> exposed = new ArrayList<>();
                for (var e : engine.ports().list(tenant, info.id())) {
                    Map<String, Object> pm = toMap(PortResult.of(e, previews.url(e), false));
                    pm.remove("workspace");
                    pm.remove("closed");
                    exposed.add(pm);
                }
                if (!exposed.isEmpty()) w.put("exposed_ports", exposed);
            }
            wss.add(w);
        }
        m.put("workspaces", wss);
        m.put("snapshots", engine.snapshots(tenant).stream().map(Results::snapshot).toList());
        String dflt;
        try {
            dflt = engine.defaultIsolation();
        } catch (EngineException e) {
            if (e.kind() != Kind.UNAVAILABLE) throw e;
            dflt = null;
        }
        m.put("default_isolation", dflt);
        List<Map<String, Object>> levels = new ArrayList<>();
        engine.driverReport().forEach((name, av) -> {
            Map<String, Object> l = new LinkedHashMap<>();
            l.put("name", name);
            l.put("available", av.available());
            l.put("reason", av.reason());
            levels.add(l);
        });
        m.put("isolation_levels", levels);
        try {
            String defaultImage = engine.images().defaultName().orElse(null); // the operator's: every tenant may open it
            m.put("images", engine.images().list().stream().filter(i -> tenant.mayImage(i.name()) || i.name().equals(defaultImage))
                    .map(Results::image).toList());
        } catch (java.io.IOException e) {
            throw new EngineException(Kind.UNAVAILABLE, "reading the image store failed: " + e.getMessage(), e);
        }
        return m;
    }
}
