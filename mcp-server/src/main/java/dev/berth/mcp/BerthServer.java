package dev.berth.mcp;

import dev.berth.engine.Engine;
import dev.berth.engine.Tenant;
import dev.berth.schemas.ToolCatalog;
import io.modelcontextprotocol.json.McpJsonMapper;
import io.modelcontextprotocol.json.jackson3.JacksonMcpJsonMapper;
import io.modelcontextprotocol.server.McpServer;
import io.modelcontextprotocol.server.McpSyncServer;
import io.modelcontextprotocol.spec.McpSchema;
import io.modelcontextprotocol.spec.McpServerTransportProvider;
import java.time.Duration;
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

    static final McpJsonMapper JSON = new JacksonMcpJsonMapper(JsonMapper.builder().build());

    private BerthServer() {}

    /** A single-tenant server (stdio): every call is made for {@link Tenant#LOCAL}. */
    static McpSyncServer build(McpServerTransportProvider transport, Engine engine) {
        Tools tools = new Tools(engine, JSON, exchange -> Tenant.LOCAL);
        return McpServer.sync(transport)
                .serverInfo(NAME, VERSION)
                .instructions(INSTRUCTIONS)
                .jsonMapper(JSON)
                .capabilities(McpSchema.ServerCapabilities.builder().tools(false).build())
                .validateToolInputs(true)
                // a run may take up to its own timeout (max 3600 s); the SDK must not give up before it does
                .requestTimeout(Duration.ofSeconds(3700))
                .tools(tools.specifications(ToolCatalog.load()))
                .build();
    }
}
