package dev.berth.mcp.cli;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code berth shell WORKSPACE [-- COMMAND...]}: an interactive terminal into a workspace of the home, as
 * {@code docker exec -it} is to a container ({@link Backend#shell}). Exit status: the command's, 1 refused or failed,
 * 2 usage.
 */
@Command(name = "shell", mixinStandardHelpOptions = true,
        customSynopsis = "berth shell WORKSPACE [--home DIR] [--config FILE] [-- COMMAND...]",
        description = "Open an interactive terminal in a workspace of this home (its shell, or COMMAND), resized with your"
                + " terminal; a parked workspace is resumed first. The home must not be served by a running Berth.")
final class ShellCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;
    @Mixin
    CommonOptions common;

    @Option(names = "--config", paramLabel = "FILE", description = "operator config (JSON): its egress, guard and lifecycle sections")
    Path config;

    @Parameters(paramLabel = "WORKSPACE", arity = "0..*", description = "workspace id or name, then (after --) the command")
    List<String> words = new ArrayList<>();

    /** The default: the workspace's login shell if it has bash, else sh, interactive. */
    static final String DEFAULT_COMMAND = "if command -v bash >/dev/null 2>&1; then exec bash -i; else exec sh -i; fi";

    @Override
    public Integer call() throws Exception {
        if (words.isEmpty()) throw Cli.usage(spec, "shell needs a workspace (id or name): berth shell WORKSPACE [-- COMMAND...]");
        String command = words.size() == 1 ? DEFAULT_COMMAND : String.join(" ", words.subList(1, words.size()));
        Cli root = Cli.of(spec);
        return root.backend.shell(common.options(spec, null, null, config, null), words.getFirst(), command, root.err);
    }
}
