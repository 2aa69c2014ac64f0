package dev.berth.engine.host;

import java.io.IOException;
import java.util.concurrent.TimeUnit;

/** Runs short host commands (mount, mkfs, chown, cp) for the drivers, failing with their output. Stateless. */
public final class HostCommand {
    private HostCommand() {}

    /**
     * Runs {@code cmd}, waiting up to 120 s; a non-zero exit is an IOException carrying the command's output. The
     * output is read while the command runs (a command that fills the pipe would otherwise wait for a reader).
     */
    public static void exec(String... cmd) throws IOException {
        output(cmd);
    }

    /** Runs {@code cmd} like {@link #exec} and returns what it printed on standard output and error. */
    public static String output(String... cmd) throws IOException {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        try {
            if (!p.waitFor(120, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IOException(String.join(" ", cmd) + " did not finish in 120 s");
            }
        } catch (InterruptedException e) {
            p.destroyForcibly();
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while running " + cmd[0]);
        }
        if (p.exitValue() != 0) {
            throw new IOException(String.join(" ", cmd) + " failed (exit " + p.exitValue() + "): " + out.strip());
        }
        return out;
    }
}
