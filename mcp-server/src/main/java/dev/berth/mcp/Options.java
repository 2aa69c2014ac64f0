package dev.berth.mcp;

import java.nio.file.Path;
import java.util.List;

/** Command-line options shared by the subcommands. */
record Options(Path home, String isolation, Path egressConfig) {

    static final class UsageException extends Exception {
        UsageException(String m) { super(m); }
    }

    static Options parse(List<String> args) throws UsageException {
        Path home = null;
        String isolation = null;
        Path egress = null;
        for (int i = 0; i < args.size(); i++) {
            String a = args.get(i);
            switch (a) {
                case "--home" -> home = Path.of(value(args, ++i, a));
                case "--isolation" -> isolation = value(args, ++i, a);
                case "--egress" -> egress = Path.of(value(args, ++i, a));
                default -> throw new UsageException("unknown option '" + a + "'");
            }
        }
        if (home == null) home = defaultHome();
        return new Options(home.toAbsolutePath(), isolation, egress);
    }

    private static String value(List<String> args, int i, String flag) throws UsageException {
        if (i >= args.size()) throw new UsageException(flag + " needs a value");
        return args.get(i);
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
