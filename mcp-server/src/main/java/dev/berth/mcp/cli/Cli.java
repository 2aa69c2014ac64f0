package dev.berth.mcp.cli;

import java.io.PrintStream;
import java.util.Arrays;
import java.util.List;

/**
 * The {@code berth} command line: {@code stdio} (MCP over stdio), {@code http} (MCP over HTTP, multi-tenant), {@code setup} (prepare this machine; idempotent),
 * {@code launcher} (install the {@code berth} command), {@code doctor} (which isolation drivers run here and why not
 * the others), {@code audit} (verify, receipt, export), {@code image} (import, pull, list, rm, gc), {@code version}.
 */
public final class Cli {
    private Cli() {}

    /** Runs one command; returns the exit status (2: usage). */
    public static int run(String[] args, Backend backend) throws Exception {
        String cmd = args.length == 0 ? "help" : args[0];
        List<String> rest = Arrays.asList(args).subList(Math.min(1, args.length), args.length);
        PrintStream out = System.out;
        int code;
        try {
            if (cmd.equals("audit")) return AuditCommand.run(rest, out, System.err); // its own options
            if (cmd.equals("image")) return ImageCommand.run(rest, backend, out, System.err);
            Options opts = Options.parse(rest);
            if (!cmd.equals("http")) opts.onlyCommonOptions(cmd);
            else if (opts.binDir() != null) throw new Options.UsageException("--bin-dir applies to 'berth setup' and 'berth launcher' only");
            code = switch (cmd) {
                case "http" -> backend.http(opts);
                case "stdio" -> backend.stdio(opts);
                case "setup" -> SetupCommand.run(opts, backend, out);
                case "doctor" -> DoctorCommand.run(opts, backend.drivers(opts), out);
                case "launcher" -> LauncherCommand.run(opts, out);
                case "version", "--version" -> {
                    out.println(backend.versionLine());
                    yield 0;
                }
                case "help", "--help", "-h" -> {
                    usage(out);
                    yield 0;
                }
                default -> {
                    System.err.println("berth: unknown command '" + cmd + "'");
                    usage(System.err);
                    yield 2;
                }
            };
        } catch (Options.UsageException e) {
            System.err.println("berth: " + e.getMessage());
            usage(System.err);
            code = 2;
        }
        return code;
    }

    static void usage(PrintStream out) {
        out.println("""
                usage: berth <command> [options]
                  stdio    serve MCP over stdin/stdout (for Claude Code, Claude Desktop, ...)
                  http     serve MCP over Streamable HTTP (/mcp) and legacy HTTP+SSE (/sse) to authenticated tenants
                  setup    install the berth launcher and prepare what the isolation drivers need (idempotent)
                  launcher install only the berth launcher (a script that runs this jar on Java 25+)
                  doctor   say which isolation drivers this machine supports, and why not the others; print the
                           public key that signs receipts and audit heads
                  audit verify [--tenant T]            check the audit chains, name the first broken record
                  audit receipt FILE [--public-key F]  check a run receipt's signature (and its chain position when
                                                       the home's audit log is at hand)
                  audit export --tenant T [--since WHEN] [--type TYPE] [--out FILE]
                                                       verified records as JSON Lines (for a SIEM); WHEN is an
                                                       instant, a date or an age (24h, 7d)
                  image import PATH[:TAG] --name NAME  import an OCI image layout or a docker/podman save archive
                  image pull REF --name NAME [--user U] [--unsafe-plain-http]
                                                       pull HOST[:PORT]/REPO[:TAG|@DIGEST] from an OCI registry
                                                       (password or token in BERTH_REGISTRY_PASSWORD)
                  image list | image default NAME|built-in | image rm NAME | image gc
                                                       named images; rm and gc refuse images in use
                                                       (import and pull take --max-mib N: unpacked size limit)
                  version  print the build, the Java runtime and the MCP protocol versions
                options:
                  --home DIR          where workspaces and snapshots live (default: $BERTH_HOME, /var/lib/berth as root,
                                      else ~/.local/share/berth)
                  --isolation NAME    default isolation for new workspaces (microvm, namespace)
                  --egress FILE       egress policy (JSON: presets, allow, limits); default: no outbound access
                  --microvm-image K   guest image of microVM workspaces: auto (developer image once `setup` built it,
                                      else the small test image), test, developer
                  --bin-dir DIR       setup, launcher: where to install the berth launcher (default /usr/local/bin as
                                      root, else ~/.local/bin)
                http options:
                  --config FILE       operator config (JSON): tokens, JWT issuer, tenants and quotas, allowed origins
                  --bind ADDR         address to listen on (default 127.0.0.1)
                  --port N            port to listen on (default 8080)""");
    }
}
