package dev.berth.mcp.cli;

import java.nio.file.Path;
import java.util.List;

/**
 * Command-line options shared by the subcommands; immutable.
 *
 * @param port   for {@code berth http} only, like {@code bind}
 * @param config for {@code berth http} and {@code berth stdio}
 * @param binDir for {@code berth setup} and {@code berth launcher}
 */
public record Options(Path home, String isolation, Path egressConfig, Integer port, String bind, Path config, String microvmImage, Path binDir) {

    static final class UsageException extends Exception {
        UsageException(String m) { super(m); }
    }

    static Options parse(List<String> args) throws UsageException {
        Path home = null;
        String isolation = null;
        Path egress = null;
        String microvmImage = "auto";
        Integer port = null;
        String bind = null;
        Path config = null;
        Path binDir = null;
        for (int i = 0; i < args.size(); i++) {
            String a = args.get(i);
            switch (a) {
                case "--home" -> home = Path.of(value(args, ++i, a));
                case "--isolation" -> isolation = value(args, ++i, a);
                case "--egress" -> egress = Path.of(value(args, ++i, a));
                case "--microvm-image" -> {
                    microvmImage = value(args, ++i, a);
                    if (!List.of("auto", "test", "developer").contains(microvmImage)) {
                        throw new UsageException("--microvm-image must be auto, test or developer, got '" + microvmImage + "'");
                    }
                }
                case "--port" -> port = port(value(args, ++i, a));
                case "--bind" -> bind = value(args, ++i, a);
                case "--config" -> config = Path.of(value(args, ++i, a)).toAbsolutePath();
                case "--bin-dir" -> binDir = Path.of(value(args, ++i, a)).toAbsolutePath();
                default -> throw new UsageException("unknown option '" + a + "'");
            }
        }
        if (home == null) home = defaultHome();
        return new Options(home.toAbsolutePath(), isolation, egress, port, bind, config, microvmImage, binDir);
    }

    /** The value after {@code flag} at {@code args[i]}, or a usage error naming the flag (shared by every command). */
    static String value(List<String> args, int i, String flag) throws UsageException {
        if (i >= args.size()) throw new UsageException(flag + " needs a value");
        return args.get(i);
    }

    private static int port(String v) throws UsageException {
        try {
            int p = Integer.parseInt(v);
            if (p >= 1 && p <= 65535) return p; // not 0: the public URL and resource metadata must name the real port
        } catch (NumberFormatException ignored) {
            // reported below with the value
        }
        throw new UsageException("--port must be a number 1-65535, got '" + v + "'");
    }

    /** Refuses flags on commands that would silently ignore them. */
    void onlyCommonOptions(String command) throws UsageException {
        if (port != null || bind != null) {
            throw new UsageException("--port and --bind apply to 'berth http' only, not '" + command + "'");
        }
        if (binDir != null && !command.equals("setup") && !command.equals("launcher")) {
            throw new UsageException("--bin-dir applies to 'berth setup' and 'berth launcher' only, not '" + command + "'");
        }
        if (config != null && !command.equals("stdio")) {
            throw new UsageException("--config applies to 'berth http' and 'berth stdio' only, not '" + command + "'");
        }
    }

    static Path defaultHome() {
        String env = System.getenv("BERTH_HOME");
        if (env != null && !env.isBlank()) return Path.of(env);
        if ("root".equals(System.getProperty("user.name"))) return Path.of("/var/lib/berth");
        String xdg = System.getenv("XDG_DATA_HOME");
        if (xdg != null && !xdg.isBlank()) return Path.of(xdg, "berth");
        return Path.of(System.getProperty("user.home"), ".local", "share", "berth");
    }
}
