package dev.berth.mcp.cli;

import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code berth stdio}: MCP over stdin/stdout for one local client ({@link Backend#stdio}). */
@Command(name = "stdio", mixinStandardHelpOptions = true,
        description = "Serve MCP over stdin/stdout (for Claude Code, Claude Desktop, ...). Ends when the client closes stdin:"
                + " ephemeral workspaces are deleted, persistent ones parked.")
final class StdioCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;
    @Mixin
    CommonOptions common;

    @Option(names = "--config", paramLabel = "FILE", description = "operator config (JSON); stdio uses its egress, guard,"
            + " lifecycle, pool and audit sections")
    Path config;

    @Override
    public Integer call() throws Exception {
        return Cli.of(spec).backend.stdio(common.options(spec, null, null, config, null));
    }
}
