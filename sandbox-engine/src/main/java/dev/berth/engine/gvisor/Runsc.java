package dev.berth.engine.gvisor;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The {@code runsc} binary: where it is, its release, and the global flags every call for one workspace shares
 * (its own state root, no network stack, the ptrace platform, host unix sockets open for the agent's channel).
 * Immutable and thread-safe.
 *
 * @param debugDir where runsc writes its debug logs ({@link GvisorSettings#debugDir()}), or null
 */
record Runsc(Path binary, long release, Path debugDir) {
    /** The oldest release tried here (Debian 12's {@code runsc 0.0~20221219.0}); older ones are refused. */
    static final long MIN_RELEASE = 20221219;
    private static final Pattern VERSION = Pattern.compile("runsc version \\S*?(\\d{8})");

    /** The runsc on PATH, or null. */
    static Runsc find(GvisorSettings settings) {
        for (String dir : System.getenv().getOrDefault("PATH", "/usr/bin:/bin").split(":")) {
            Path p = Path.of(dir, "runsc");
            if (Files.isExecutable(p)) return new Runsc(p, release(p), settings.debugDir());
        }
        return null;
    }

    private static long release(Path p) {
        try {
            String out = dev.berth.engine.host.HostCommand.run(List.of(p.toString(), "--version"), java.time.Duration.ofSeconds(10)).output();
            Matcher m = VERSION.matcher(out);
            return m.find() ? Long.parseLong(m.group(1)) : 0;
        } catch (IOException e) {
            return 0;
        }
    }

    /** {@code runsc} with the flags shared by every call on the workspace whose runsc state lives in {@code root}. */
    List<String> command(Path root, String... args) {
        List<String> c = new ArrayList<>(List.of(binary.toString(), "--root", root.toString(), "--network=none",
                "--platform=ptrace", "--host-uds=open"));
        // -Dberth.gvisor.debug=DIR (or BERTH_GVISOR_DEBUG): runsc's debug log with a system-call trace per workspace (unbounded: never in production)
        if (debugDir != null) c.addAll(List.of("--debug", "--strace", "--debug-log=" + debugDir.resolve(root.getParent().getFileName()) + "/"));
        c.addAll(List.of(args));
        return c;
    }
}
