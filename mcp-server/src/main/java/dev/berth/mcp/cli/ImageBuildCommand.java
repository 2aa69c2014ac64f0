package dev.berth.mcp.cli;

import java.io.PrintStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code berth image build FILE --name NAME [--home DIR] [--config FILE | --egress FILE] [--step-timeout S]}: builds
 * an image from a recipe in a namespace workspace of its own engine ({@link Backend#buildImage}). Exit status: 0
 * built, 1 refused or failed, 2 usage.
 */
final class ImageBuildCommand {
    private ImageBuildCommand() {}

    static int run(List<String> argv, Backend backend, PrintStream out, PrintStream err) throws Options.UsageException {
        String file = null;
        String name = null;
        int stepTimeout = 1800;
        List<String> engineArgs = new ArrayList<>(List.of("--isolation", "namespace"));
        for (int i = 0; i < argv.size(); i++) {
            String s = argv.get(i);
            switch (s) {
                case "--name" -> name = Options.value(argv, ++i, s);
                case "--home", "--config", "--egress" -> {
                    engineArgs.add(s);
                    engineArgs.add(Options.value(argv, ++i, s));
                }
                case "--step-timeout" -> {
                    try {
                        stepTimeout = Integer.parseInt(Options.value(argv, ++i, s));
                    } catch (NumberFormatException e) {
                        throw new Options.UsageException("--step-timeout needs a number of seconds");
                    }
                }
                default -> {
                    if (s.startsWith("--") || file != null) throw new Options.UsageException("image build takes FILE --name NAME"
                            + " [--home DIR] [--config FILE | --egress FILE] [--step-timeout S]; unexpected '" + s + "'");
                    file = s;
                }
            }
        }
        if (file == null) throw new Options.UsageException("image build needs the recipe file (JSON, berth_recipe 1)");
        if (name == null) throw new Options.UsageException("--name NAME is needed: the name open_workspace {image} uses");
        return backend.buildImage(Options.parse(engineArgs), Path.of(file), name, stepTimeout, out, err);
    }
}
