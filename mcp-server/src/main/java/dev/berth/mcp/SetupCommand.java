package dev.berth.mcp;

import dev.berth.engine.agent.AgentBinary;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * {@code berth setup}: installs the Debian packages the drivers need (when root and missing) and prepares the Berth
 * home (agent binary, guest images). Idempotent: a second run only checks.
 */
final class SetupCommand {
    /** Debian packages and a file each one provides (to check without asking dpkg). */
    private static final List<List<String>> PACKAGES = List.of(
            List.of("bubblewrap", "/usr/bin/bwrap"));

    private SetupCommand() {}

    static int run(Options opts, PrintStream out) throws IOException, InterruptedException {
        List<String> missing = new ArrayList<>();
        for (List<String> p : PACKAGES) if (!Files.exists(Path.of(p.get(1)))) missing.add(p.get(0));
        if (!missing.isEmpty()) {
            if (!"root".equals(System.getProperty("user.name"))) {
                out.println("missing packages: " + String.join(" ", missing) + " (run setup as root, or apt-get install them)");
                return 1;
            }
            out.println("installing " + String.join(" ", missing) + " ...");
            if (sh(out, "apt-get", "update", "-qq") != 0) return 1;
            List<String> cmd = new ArrayList<>(List.of("apt-get", "install", "-y", "-qq", "--no-install-recommends"));
            cmd.addAll(missing);
            if (sh(out, cmd.toArray(String[]::new)) != 0) return 1;
        }
        Files.createDirectories(opts.home());
        Path agent = AgentBinary.extract(opts.home().resolve("images"));
        out.println("guest agent: " + agent);
        out.println("home: " + opts.home());
        return DoctorCommand.run(opts, out);
    }

    private static int sh(PrintStream out, String... cmd) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(cmd).inheritIO().redirectOutput(ProcessBuilder.Redirect.to(new java.io.File("/dev/stderr"))).start();
        if (!p.waitFor(30, TimeUnit.MINUTES)) {
            p.destroyForcibly();
            out.println(String.join(" ", cmd) + " did not finish in 30 minutes");
            return 1;
        }
        if (p.exitValue() != 0) out.println(String.join(" ", cmd) + " failed with exit status " + p.exitValue());
        return p.exitValue();
    }
}
