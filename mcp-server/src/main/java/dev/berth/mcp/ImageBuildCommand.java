package dev.berth.mcp;

import dev.berth.engine.Engine;
import dev.berth.engine.EngineException;
import dev.berth.engine.HomeOwnedException;
import dev.berth.engine.RecipeBuild;
import dev.berth.engine.Tenant;
import dev.berth.engine.image.ImageException;
import dev.berth.engine.image.ImageRecord;
import dev.berth.engine.image.ImportLimits;
import dev.berth.engine.image.Recipe;
import dev.berth.engine.spi.Resources;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code berth image build FILE --name NAME [--home DIR] [--config FILE | --egress FILE] [--step-timeout S]}: builds
 * an image from a recipe ({@link Recipe}) in a namespace workspace of its own engine, whose egress ceiling is the
 * operator's (the config's egress section or the egress file; none: nothing is reachable) and, below it, the
 * recipe's {@code allow}. Progress goes to stdout, one line per step and per output line. The home must not be
 * served by a running Berth (its engine owns the home). Exit status: 0 built, 1 refused or failed, 2 usage.
 */
final class ImageBuildCommand {
    private ImageBuildCommand() {}

    static int run(List<String> argv, PrintStream out, PrintStream err) throws Options.UsageException {
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
        Options opts = Options.parse(engineArgs);
        Recipe recipe;
        try {
            recipe = Recipe.read(Path.of(file));
        } catch (ImageException | IOException e) {
            err.println("berth image build: " + e.getMessage());
            return 1;
        }
        OperatorConfig operator;
        try {
            operator = opts.config() == null ? null : OperatorConfig.loadForStdio(opts.config());
        } catch (OperatorConfig.ConfigException e) {
            err.println("berth image build: " + e.getMessage());
            return 2;
        }
        try (Engine engine = Drivers.engine(opts, operator, null, false)) {
            RecipeBuild build = new RecipeBuild(engine, Tenant.LOCAL, new Resources(2, 1024, 256, 8192), stepTimeout);
            ImageRecord r = build.build(recipe, name, "recipe:" + Path.of(file).toAbsolutePath(), ImportLimits.DEFAULT, out::println);
            out.println("built " + name + " = " + r.digest() + " in " + r.importMillis() + " ms (import); build log kept with the image");
            return 0;
        } catch (HomeOwnedException owned) {
            err.println("berth image build: a running Berth serves this home; stop it or build in another --home, then import");
            return 1;
        } catch (ImageException | EngineException | IOException e) {
            err.println("berth image build: " + e.getMessage());
            return 1;
        }
    }
}
