package dev.berth.mcp.cli;

import java.nio.file.Path;

/**
 * The options of a command that builds an engine, as parsed and checked by the command line; immutable.
 *
 * @param home         absolute
 * @param isolation    the default isolation, or null for the strongest that runs here
 * @param egressConfig the egress policy file, or null
 * @param port         for {@code berth http} only, like {@code bind}; null: the config's
 * @param config       for {@code berth http}, {@code berth stdio} and {@code berth image build}; absolute
 * @param microvmImage auto, test or developer
 * @param binDir       for {@code berth setup} and {@code berth launcher}; absolute
 */
public record Options(Path home, String isolation, Path egressConfig, Integer port, String bind, Path config, String microvmImage, Path binDir) {

    /** The home when {@code --home} is not given: $BERTH_HOME, /var/lib/berth as root, else the XDG data directory. */
    static Path defaultHome() {
        String env = System.getenv("BERTH_HOME");
        if (env != null && !env.isBlank()) return Path.of(env);
        if ("root".equals(System.getProperty("user.name"))) return Path.of("/var/lib/berth");
        String xdg = System.getenv("XDG_DATA_HOME");
        if (xdg != null && !xdg.isBlank()) return Path.of(xdg, "berth");
        return Path.of(System.getProperty("user.home"), ".local", "share", "berth");
    }
}
