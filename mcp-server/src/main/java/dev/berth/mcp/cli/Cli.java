package dev.berth.mcp.cli;

import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;
import picocli.CommandLine.UnmatchedArgumentException;

/**
 * The {@code berth} command line (picocli): {@code stdio}, {@code http}, {@code setup}, {@code launcher},
 * {@code doctor}, {@code audit verify|receipt|export}, {@code image import|pull|build|list|default|rm|gc},
 * {@code version}, {@code help}; every command has a generated {@code --help}. A usage error prints
 * {@code berth: <what was wrong>} (with the closest command or option when the word looks like a typo) and the
 * command's usage on stderr, and exits 2. One instance per run; not thread-safe.
 */
@Command(name = "berth", mixinStandardHelpOptions = true, versionProvider = Cli.Version.class,
        description = "Isolated workspaces for coding agents, served over MCP.",
        footer = "%nRun 'berth COMMAND --help' for a command's options; exit status 2 is a usage error.",
        subcommands = {StdioCommand.class, HttpCommand.class, NodeCommand.class, FleetCommand.class, SetupCommand.class, LauncherCommand.class, DoctorCommand.class,
                AuditCommand.class, ImageCommand.class, ShellCommand.class, Cli.VersionCommand.class, CommandLine.HelpCommand.class})
public final class Cli implements Callable<Integer> {
    final Backend backend;
    final PrintStream out;
    final PrintStream err;
    @Spec
    CommandSpec spec;

    private Cli(Backend backend, PrintStream out, PrintStream err) {
        this.backend = backend;
        this.out = out;
        this.err = err;
    }

    /** Runs one command line on the process's stdout and stderr; returns the exit status (2: usage). */
    public static int run(String[] args, Backend backend) {
        return run(args, backend, System.out, System.err);
    }

    /** Runs one command line; returns the exit status (2: usage). */
    public static int run(String[] args, Backend backend, PrintStream out, PrintStream err) {
        return commandLine(backend, out, err).execute(args);
    }

    static CommandLine commandLine(Backend backend, PrintStream out, PrintStream err) {
        CommandLine cl = new CommandLine(new Cli(backend, out, err));
        cl.setOut(new PrintWriter(out, true, StandardCharsets.UTF_8));
        cl.setErr(new PrintWriter(err, true, StandardCharsets.UTF_8));
        cl.setOverwrittenOptionsAllowed(true); // the last of a repeated option wins, as it always did
        dropVersionOption(cl.getSubcommands().values()); // only `berth --version` and `berth version` print it
        cl.setParameterExceptionHandler((e, args) -> {
            err.println("berth: " + message(e));
            err.print(e.getCommandLine().getUsageMessage());
            err.flush();
            return 2;
        });
        return cl;
    }

    private static void dropVersionOption(java.util.Collection<CommandLine> commands) {
        for (CommandLine c : commands) {
            OptionSpec v = c.getCommandSpec().findOption("--version");
            if (v != null) c.getCommandSpec().remove(v);
            dropVersionOption(c.getSubcommands().values());
        }
    }

    /** The root of the command a subcommand belongs to: where the backend and the streams are. */
    static Cli of(CommandSpec spec) {
        return (Cli) spec.root().userObject();
    }

    /** {@code berth} alone prints the usage. */
    @Override
    public Integer call() {
        spec.commandLine().usage(out);
        return 0;
    }

    /** What went wrong with a command line, in Berth's words. */
    static String message(ParameterException e) {
        CommandLine cl = e.getCommandLine();
        if (e instanceof UnmatchedArgumentException u && !u.getUnmatched().isEmpty()) {
            return unmatched(cl, u.getUnmatched().getFirst());
        }
        if (e instanceof CommandLine.MissingParameterException m && !m.getMissing().isEmpty()
                && m.getMissing().getFirst() instanceof OptionSpec o && e.getMessage().startsWith("Missing required parameter for option")) {
            return o.longestName() + " needs a value";
        }
        return e.getMessage();
    }

    private static String unmatched(CommandLine cl, String arg) {
        String command = cl.getCommandName();
        if (!arg.startsWith("-")) {
            if (!cl.getSubcommands().isEmpty()) {
                List<String> names = new ArrayList<>(cl.getSubcommands().keySet());
                String hint = Suggestions.closest(arg, names);
                String what = cl.getParent() == null ? "unknown command '" + arg + "'" : "unknown " + command + " subcommand '" + arg + "'";
                return what + (hint != null ? "; did you mean '" + hint + "'?" : "; use " + String.join(", ", names));
            }
            return "unexpected argument '" + arg + "' for '" + qualified(cl) + "'";
        }
        String option = arg.contains("=") ? arg.substring(0, arg.indexOf('=')) : arg;
        if (cl.getParent() != null && cl.getParent().getParent() == null) {
            String elsewhere = switch (option) {
                case "--port", "--bind" -> "--port and --bind apply to 'berth http' and 'berth node' only, not '" + command + "'";
                case "--bin-dir" -> "--bin-dir applies to 'berth setup' and 'berth launcher' only, not '" + command + "'";
                case "--config" -> "--config applies to 'berth http', 'berth node' and 'berth stdio' only, not '" + command + "'";
                default -> null;
            };
            if (elsewhere != null) return elsewhere;
        }
        List<String> names = new ArrayList<>();
        for (OptionSpec o : cl.getCommandSpec().options()) names.addAll(List.of(o.names()));
        String hint = Suggestions.closest(option, names);
        return "unknown option '" + option + "'" + (hint != null ? "; did you mean '" + hint + "'?" : " for '" + qualified(cl) + "'");
    }

    private static String qualified(CommandLine cl) {
        return cl.getCommandSpec().qualifiedName(" ");
    }

    /** A usage error found after parsing (a missing or malformed value the parser cannot check). */
    static ParameterException usage(CommandSpec spec, String message) {
        return new ParameterException(spec.commandLine(), message);
    }

    /** {@code --version}: the same text as {@code berth version}. */
    static final class Version implements CommandLine.IVersionProvider {
        @Spec
        CommandSpec spec;

        @Override
        public String[] getVersion() {
            return Cli.of(spec).backend.versionLine().split("\n");
        }
    }

    /** {@code berth version}. */
    @Command(name = "version", description = "Print the build, the Java runtime and the MCP protocol versions.", mixinStandardHelpOptions = true)
    static final class VersionCommand implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        @Override
        public Integer call() {
            Cli.of(spec).out.println(Cli.of(spec).backend.versionLine());
            return 0;
        }
    }
}
