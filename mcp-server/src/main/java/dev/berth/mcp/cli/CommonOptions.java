package dev.berth.mcp.cli;

import java.nio.file.Path;
import java.util.List;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;

/** The options every command that builds an engine takes (a picocli mixin); filled by the parser, then read once. */
final class CommonOptions {
    @Option(names = "--home", paramLabel = "DIR", description = "where workspaces and snapshots live (default: $BERTH_HOME,"
            + " /var/lib/berth as root, else ~/.local/share/berth)")
    Path home;

    @Option(names = "--isolation", paramLabel = "NAME", description = "default isolation for new workspaces (microvm, gvisor,"
            + " namespace); default: the strongest that runs here")
    String isolation;

    @Option(names = "--egress", paramLabel = "FILE", description = "egress policy (JSON: presets, allow, limits); default: no"
            + " outbound access")
    Path egress;

    @Option(names = "--microvm-image", paramLabel = "KIND", defaultValue = "auto", description = "guest image of microVM"
            + " workspaces: auto (developer image once `setup` built it, else the small test image), test, developer")
    String microvmImage;

    /**
     * The options of a command, checked.
     *
     * @param port, bind and config: {@code berth http} (config also {@code berth stdio}); binDir: setup and launcher
     */
    Options options(CommandSpec spec, Integer port, String bind, Path config, Path binDir) {
        if (!List.of("auto", "test", "developer").contains(microvmImage)) {
            throw new ParameterException(spec.commandLine(), "--microvm-image must be auto, test or developer, got '" + microvmImage + "'");
        }
        return new Options((home != null ? home : Options.defaultHome()).toAbsolutePath(), isolation, egress, port, bind,
                config == null ? null : config.toAbsolutePath(), microvmImage, binDir == null ? null : binDir.toAbsolutePath());
    }

    /** {@code --port}'s value: 1-65535 (not 0: the public URL and resource metadata must name the real port). */
    static Integer port(CommandSpec spec, String v) {
        if (v == null) return null;
        try {
            int p = Integer.parseInt(v);
            if (p >= 1 && p <= 65535) return p;
        } catch (NumberFormatException ignored) {
            // reported below with the value
        }
        throw new ParameterException(spec.commandLine(), "--port must be a number 1-65535, got '" + v + "'");
    }
}
