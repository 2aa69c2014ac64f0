package dev.berth.mcp;

import dev.berth.engine.Engine;
import dev.berth.engine.api.Tenant;
import dev.berth.mcp.cli.LauncherCommand;
import dev.berth.mcp.tools.CancellableSessions;
import dev.berth.mcp.tools.Cancellations;
import dev.berth.mcp.tools.Tools;
import dev.berth.schemas.ToolCatalog;
import io.modelcontextprotocol.json.McpJsonMapper;
import io.modelcontextprotocol.json.jackson3.JacksonMcpJsonMapper;
import io.modelcontextprotocol.server.McpServer;
import io.modelcontextprotocol.server.McpSyncServer;
import io.modelcontextprotocol.spec.McpSchema;
import io.modelcontextprotocol.spec.ProtocolVersions;
import io.modelcontextprotocol.spec.McpServerTransportProvider;
import io.modelcontextprotocol.server.McpServerFeatures.SyncToolSpecification;
import io.modelcontextprotocol.server.McpSyncServerExchange;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import tools.jackson.databind.json.JsonMapper;

/** Builds the MCP server over an engine and a transport: tools from the catalog, inputs validated by the SDK. */
final class BerthServer {
    static final String NAME = "berth";
    static final String VERSION = BerthServer.class.getPackage().getImplementationVersion() == null
            ? "dev" : BerthServer.class.getPackage().getImplementationVersion();
    static final String INSTRUCTIONS = """
            Berth gives you isolated Linux workspaces. open_workspace first (persistent with a name for a project you
            will come back to; ephemeral for a one-off), then run commands in it. park a persistent workspace when you
            pause (it costs storage only and resumes on the next run); snapshot before risky changes and fork with
            open_workspace {from_snapshot}. Network access goes through an allowlisting proxy; denials say why.""";

    /** MCP protocol versions this server speaks, newest first (the SDK's transports offer the same). */
    static final List<String> PROTOCOL_VERSIONS = List.of(ProtocolVersions.MCP_2025_11_25, ProtocolVersions.MCP_2025_06_18,
            ProtocolVersions.MCP_2025_03_26, ProtocolVersions.MCP_2024_11_05);

    static final McpJsonMapper JSON = new JacksonMcpJsonMapper(JsonMapper.builder().build());

    private BerthServer() {}

    /** What {@code berth version} prints: the build, the Java runtime running it, the MCP protocol versions. */
    static String versionLine() {
        String built = "";
        java.nio.file.Path jar = LauncherCommand.runningJar();
        if (jar != null) {
            try (var f = new java.util.jar.JarFile(jar.toFile())) {
                String t = f.getManifest() == null ? null : f.getManifest().getMainAttributes().getValue("Berth-Built");
                built = t == null ? "" : ", built " + t + " (" + jar + ")";
            } catch (java.io.IOException e) {
                built = " (" + jar + ")";
            }
        }
        return "berth " + VERSION + built + "\n"
                + "java " + Runtime.version() + " (" + System.getProperty("java.vendor") + ", " + System.getProperty("java.home") + ")\n"
                + "mcp protocol " + PROTOCOL_VERSIONS.getFirst() + " (also " + String.join(", ", PROTOCOL_VERSIONS.subList(1, PROTOCOL_VERSIONS.size())) + ")";
    }

    /** A single-tenant server (stdio): every call is made for {@link Tenant#LOCAL}. */
    static McpSyncServer build(McpServerTransportProvider transport, Engine engine) {
        return build(transport, engine, "stdio", List.of());
    }

    /** The same, naming the transport in audit records ("home-socket" for a stdio client served through the owner). */
    static McpSyncServer build(McpServerTransportProvider transport, Engine engine, String transportName) {
        return build(transport, engine, transportName, List.of());
    }

    /** The same, with the operator's project_roots (where from_directory may read and branches may be written). */
    static McpSyncServer build(McpServerTransportProvider transport, Engine engine, String transportName, List<java.nio.file.Path> projectRoots) {
        Cancellations cancellations = new Cancellations();
        return build(McpServer.sync(new CancellableSessions(transport, cancellations, Tenant.LOCAL.id())), engine,
                exchange -> Tenant.LOCAL, cancellations, transportName, projectRoots);
    }

    /**
     * A server on any transport.
     *
     * @param tenants       who a call is made for
     * @param cancellations where the transport delivers cancellations; it names each call in the transport context
     * @param transport     the transport's name in audit records ("stdio", "streamable-http", "sse")
     */
    static McpSyncServer build(McpServer.SyncSpecification<?> spec, Engine engine, Function<McpSyncServerExchange, Tenant> tenants,
                               Cancellations cancellations, String transport) {
        return build(spec, engine, tenants, cancellations, transport, List.of());
    }

    static McpSyncServer build(McpServer.SyncSpecification<?> spec, Engine engine, Function<McpSyncServerExchange, Tenant> tenants,
                               Cancellations cancellations, String transport, List<java.nio.file.Path> projectRoots) {
        FileTools files = new FileTools(engine);
        Map<String, Tools.Handler> fileTools = Map.of(
                "read_file", (x, a, r) -> files.read(tenants.apply(x), a),
                "write_file", (x, a, r) -> files.write(tenants.apply(x), a),
                "list_files", (x, a, r) -> files.list(tenants.apply(x), a));
        Tools tools = new Tools(engine, JSON, tenants, transport, fileTools, projectRoots);
        List<SyncToolSpecification> specs = tools.specifications(ToolCatalog.load()).stream()
                .map(s -> SyncToolSpecification.builder().tool(s.tool())
                        .callHandler((ex, req) -> cancellations.run(Cancellations.callKey(ex), () -> s.callHandler().apply(ex, req)))
                        .build())
                .toList();
        return spec
                .serverInfo(NAME, VERSION)
                .instructions(INSTRUCTIONS)
                .jsonMapper(JSON)
                .capabilities(McpSchema.ServerCapabilities.builder().tools(false).build())
                .validateToolInputs(true)
                // a run may take up to its own timeout (max 3600 s); the SDK must not give up before it does
                .requestTimeout(Duration.ofSeconds(3700))
                .tools(specs)
                .build();
    }
}
