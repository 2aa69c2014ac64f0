package dev.berth.mcp;

import dev.berth.engine.Engine;
import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.HomeOwnedException;
import dev.berth.engine.RecipeBuild;
import dev.berth.engine.api.Tenant;
import dev.berth.engine.image.ImageException;
import dev.berth.engine.image.ImageRecord;
import dev.berth.engine.image.ImportLimits;
import dev.berth.engine.image.Recipe;
import dev.berth.engine.spi.Resources;
import dev.berth.mcp.cli.Options;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;

/**
 * {@code berth image build}'s wiring: builds an image from a recipe ({@link Recipe}) in a namespace workspace of its
 * own engine, whose egress ceiling is the operator's (the config's egress section or the egress file; none: nothing
 * is reachable) and, below it, the recipe's {@code allow}. Progress goes to stdout, one line per step and per output
 * line. The home must not be served by a running Berth (its engine owns the home). Exit status: 0 built, 1 refused
 * or failed, 2 a broken operator config.
 */
final class BuildImage {
    private BuildImage() {}

    /** @param opts the engine's options: home, config or egress file, isolation namespace */
    static int run(Options opts, Path file, String name, int stepTimeout, PrintStream out, PrintStream err) {
        Recipe recipe;
        try {
            recipe = Recipe.read(file);
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
            ImageRecord r = build.build(recipe, name, "recipe:" + file.toAbsolutePath(), ImportLimits.DEFAULT, out::println);
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
