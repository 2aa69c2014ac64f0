package dev.berth.mcp.cli;

import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code berth http}: MCP over Streamable HTTP and legacy HTTP+SSE for authenticated tenants ({@link Backend#http}). */
@Command(name = "http", mixinStandardHelpOptions = true,
        description = "Serve MCP over Streamable HTTP (/mcp) and legacy HTTP+SSE (/sse) to authenticated tenants, until"
                + " SIGTERM/SIGINT.")
final class HttpCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;
    @Mixin
    CommonOptions common;

    @Option(names = "--config", paramLabel = "FILE", description = "operator config (JSON), required: tokens, JWT issuer,"
            + " tenants and quotas, allowed origins")
    Path config;

    @Mixin
    ListenOptions listen;

    @Override
    public Integer call() throws Exception {
        return Cli.of(spec).backend.http(common.options(spec, listen.port(spec), listen.bind, config, null));
    }
}
