package dev.berth.mcp.cli;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code berth image build FILE --name NAME [--home DIR] [--config FILE | --egress FILE] [--step-timeout S]}: builds
 * an image from a recipe in a namespace workspace of its own engine ({@link Backend#buildImage}). Exit status: 0
 * built, 1 refused or failed, 2 usage.
 */
@Command(name = "build", mixinStandardHelpOptions = true,
        customSynopsis = {"berth image build FILE --name NAME [--home DIR]", "      [--config FILE | --egress FILE] [--step-timeout S]"},
        description = "Build an image from a recipe (JSON, berth_recipe 1) in a namespace workspace whose egress is the"
                + " operator's; the home must not be served by a running Berth.")
final class ImageBuildCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Parameters(paramLabel = "FILE", arity = "0..*", hidden = true)
    List<String> files = new ArrayList<>();

    @Option(names = "--name", paramLabel = "NAME", description = "the name open_workspace {image} uses (required)")
    String name;

    @Option(names = "--home", paramLabel = "DIR", description = "the Berth home (default: $BERTH_HOME, /var/lib/berth as root,"
            + " else ~/.local/share/berth)")
    Path home;

    @Option(names = "--config", paramLabel = "FILE", description = "operator config: its egress section is the build's ceiling")
    Path config;

    @Option(names = "--egress", paramLabel = "FILE", description = "egress policy file (instead of a config)")
    Path egress;

    @Option(names = "--step-timeout", paramLabel = "S", defaultValue = "1800", description = "seconds per step (default 1800)")
    String stepTimeout;

    @Override
    public Integer call() {
        if (files.size() > 1) {
            throw Cli.usage(spec, "image build takes FILE --name NAME [--home DIR] [--config FILE | --egress FILE] [--step-timeout S];"
                    + " unexpected '" + files.get(1) + "'");
        }
        int timeout;
        try {
            timeout = Integer.parseInt(stepTimeout);
        } catch (NumberFormatException e) {
            throw Cli.usage(spec, "--step-timeout needs a number of seconds");
        }
        if (files.isEmpty()) throw Cli.usage(spec, "image build needs the recipe file (JSON, berth_recipe 1)");
        if (name == null) throw Cli.usage(spec, "--name NAME is needed: the name open_workspace {image} uses");
        Options opts = new Options((home != null ? home : Options.defaultHome()).toAbsolutePath(), "namespace", egress, null, null,
                config == null ? null : config.toAbsolutePath(), "auto", null);
        Cli root = Cli.of(spec);
        return root.backend.buildImage(opts, Path.of(files.getFirst()), name, timeout, root.out, root.err);
    }
}
