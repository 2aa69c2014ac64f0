package dev.berth.engine.host;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Runs short host commands (mount, mkfs, chown, cp, qemu-img, fallocate) for the drivers, failing with their output.
 * Stateless.
 *
 * <p>The time limit holds whatever the command does: its output is read on a thread of its own while this one waits
 * for the exit, so a command that hangs (a mount on a stuck device, a copy on a hung file system) is killed, with
 * whatever it started, when its time is up, and one that leaves a child holding its output open (a daemon) returns as
 * soon as it exits. Before, the output was read to its end first, so the limit never applied to a command that kept
 * its output open, and the caller waited forever. The reading thread is a platform daemon thread: a blocking pipe
 * read on a virtual thread holds its carrier.
 */
public final class HostCommand {
    private HostCommand() {}

    /** The default limit of {@link #exec} and {@link #output}. */
    public static final Duration LIMIT = Duration.ofSeconds(120);
    /** Output kept for the caller and for error messages; the rest is read and dropped (a command never blocks on it). */
    static final int KEEP = 4 << 20;
    /** How long the output is still read after the command exited (a child it left may hold the pipe open). */
    private static final long DRAIN_AFTER_EXIT_MS = 2_000;

    /** What a command did: its exit code and what it printed (standard output and error, the first {@link #KEEP} bytes). */
    public record Result(int exit, String output) {}

    /**
     * Runs {@code cmd}, waiting up to 120 s; a non-zero exit is an IOException carrying the command's output.
     */
    public static void exec(String... cmd) throws IOException {
        output(cmd);
    }

    /** Runs {@code cmd} like {@link #exec} and returns what it printed on standard output and error. */
    public static String output(String... cmd) throws IOException {
        return output(List.of(cmd), LIMIT);
    }

    /** Runs {@code cmd} within {@code limit}; a non-zero exit is an IOException carrying (the end of) its output. */
    public static String output(List<String> cmd, Duration limit) throws IOException {
        Result r = run(cmd, limit);
        if (r.exit() != 0) {
            throw new IOException(String.join(" ", cmd) + " failed (exit " + r.exit() + "): " + tail(r.output().strip()));
        }
        return r.output();
    }

    /**
     * Runs {@code cmd} within {@code limit} and returns its exit code and output, whatever the code. When the limit
     * passes, the command and everything it started are killed and an IOException says so.
     */
    public static Result run(List<String> cmd, Duration limit) throws IOException {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null"))).start();
        ByteArrayOutputStream kept = new ByteArrayOutputStream();
        Thread reader = Thread.ofPlatform().daemon().name("berth-host-command-output").start(() -> drain(p.getInputStream(), kept));
        try {
            if (!p.waitFor(limit.toMillis(), TimeUnit.MILLISECONDS)) {
                kill(p);
                throw new IOException(String.join(" ", cmd) + " did not finish in " + limit.toSeconds() + " s; it was killed"
                        + outputSoFar(kept));
            }
            reader.join(DRAIN_AFTER_EXIT_MS);
        } catch (InterruptedException e) {
            kill(p);
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while running " + cmd.getFirst());
        }
        synchronized (kept) {
            return new Result(p.exitValue(), kept.toString(StandardCharsets.UTF_8));
        }
    }

    private static void drain(InputStream in, ByteArrayOutputStream kept) {
        byte[] buf = new byte[8192];
        try (in) {
            for (int n; (n = in.read(buf)) > 0; ) {
                synchronized (kept) {
                    if (kept.size() < KEEP) kept.write(buf, 0, Math.min(n, KEEP - kept.size()));
                }
            }
        } catch (IOException ignored) {
            // the stream ends with the process (or was closed after it was killed)
        }
    }

    /** Kills the command and everything it started, and waits (briefly) for it to be gone. */
    private static void kill(Process p) {
        p.descendants().forEach(ProcessHandle::destroyForcibly);
        p.destroyForcibly();
        try {
            p.waitFor(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static String outputSoFar(ByteArrayOutputStream kept) {
        synchronized (kept) {
            String s = kept.toString(StandardCharsets.UTF_8).strip();
            return s.isEmpty() ? "" : " (its output so far: " + tail(s) + ")";
        }
    }

    /** The last 2000 characters of {@code s}, for error messages. */
    public static String tail(String s) { return s.length() > 2000 ? s.substring(s.length() - 2000) : s; }
}
