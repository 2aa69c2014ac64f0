package dev.berth.mcp.cli;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code berth fleet status --config FILE}: the fleet the config's {@code fleet} section names, read from etcd (live
 * nodes, their offers and load, workspaces per owner). Exit status: 0 printed, 1 etcd refused or unreachable (the
 * reason on stderr), 2 usage or a config without a fleet section.
 */
@Command(name = "fleet", mixinStandardHelpOptions = true, description = "The fleet of Berth nodes on etcd (docs/fleet.md).",
        subcommands = {FleetCommand.Status.class})
final class FleetCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
        throw Cli.usage(spec, "fleet needs a subcommand: status");
    }

    @Command(name = "status", mixinStandardHelpOptions = true,
            description = "Print the live nodes (address, levels, free memory, CPUs, live workspaces, warm pool, cordon) and the"
                    + " workspaces per owner node, as etcd has them.")
    static final class Status implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        @Option(names = "--config", paramLabel = "FILE", required = true, description = "operator config (JSON) with a fleet section")
        Path config;

        @Override
        public Integer call() throws Exception {
            return Cli.of(spec).backend.fleetStatus(config, spec.commandLine().getOut(), spec.commandLine().getErr());
        }
    }
}
