package dev.berth.mcp.cli;

import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code berth node}: {@code berth http} as a member of a fleet ({@link Backend#node}); the config must have a
 * {@code fleet} section (etcd endpoints, node id, advertised address, internal credential). docs/fleet.md.
 */
@Command(name = "node", mixinStandardHelpOptions = true,
        description = "Join the fleet named in the config's fleet section (etcd) and serve MCP over Streamable HTTP and"
                + " legacy HTTP+SSE like 'berth http', until SIGTERM/SIGINT; leaving revokes this node's lease.")
final class NodeCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;
    @Mixin
    CommonOptions common;

    @Option(names = "--config", paramLabel = "FILE", description = "operator config (JSON), required, with a fleet section")
    Path config;

    @Option(names = "--bind", paramLabel = "ADDR", description = "address to listen on (default: the config's, else 127.0.0.1)")
    String bind;

    @Option(names = "--port", paramLabel = "N", description = "port to listen on, 1-65535 (default: the config's, else 8080)")
    String port;

    @Override
    public Integer call() throws Exception {
        return Cli.of(spec).backend.node(common.options(spec, CommonOptions.port(spec, port), bind, config, null));
    }
}
