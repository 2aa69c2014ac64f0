package dev.berth.mcp.cli;

import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code berth node}: {@code berth http} as a member of a fleet ({@link Backend#node}); the config must have a
 * {@code fleet} section (etcd endpoints, node id, advertised address, internal credential). docs/fleet.md.
 */
@Command(name = "node", mixinStandardHelpOptions = true,
        description = "Join the fleet named in the config's fleet section (etcd) and serve MCP over Streamable HTTP and"
                + " legacy HTTP+SSE like 'berth http', until SIGTERM/SIGINT; leaving revokes this node's lease.",
        subcommands = {NodeCommand.Cordon.class, NodeCommand.Uncordon.class})
final class NodeCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;
    @Mixin
    CommonOptions common;

    @Option(names = "--config", paramLabel = "FILE", description = "operator config (JSON), required, with a fleet section")
    Path config;

    @Mixin
    ListenOptions listen;

    @Override
    public Integer call() throws Exception {
        return Cli.of(spec).backend.node(common.options(spec, listen.port(spec), listen.bind, config, null));
    }

    /** {@code berth node cordon|uncordon ID --config FILE}: placement skips a cordoned node; its workspaces stay. */
    abstract static class Mark implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        @Parameters(index = "0", paramLabel = "NODE_ID", description = "the node's fleet.node_id")
        String nodeId;

        @Option(names = "--config", paramLabel = "FILE", required = true, description = "operator config (JSON) with a fleet section")
        Path config;

        abstract boolean on();

        @Override
        public Integer call() {
            return Cli.of(spec).backend.cordon(config, nodeId, on(), spec.commandLine().getOut(), spec.commandLine().getErr());
        }
    }

    @Command(name = "cordon", mixinStandardHelpOptions = true, description = "Mark a node so that placement skips it (its workspaces stay).")
    static final class Cordon extends Mark {
        @Override
        boolean on() { return true; }
    }

    @Command(name = "uncordon", mixinStandardHelpOptions = true, description = "Let placement use a cordoned node again.")
    static final class Uncordon extends Mark {
        @Override
        boolean on() { return false; }
    }
}
