package dev.berth.engine.transfer;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Runs git on the server's machine against the user's repository, defanged: no hooks ({@code core.hooksPath} is
 * {@code /dev/null}), no file-system monitor, no pager, no system or global configuration, no prompts, the git
 * directory named explicitly (so a {@code .git} file is never followed), and a time limit. Output goes to files, not
 * pipes, so a listing of 200k paths never blocks on a full pipe. Stateless.
 */
final class HostGit {
    private static final long LIMIT_S = 600;

    /** What git did: exit code, standard output (whole) and error (its start). */
    record Result(int exit, byte[] stdout, String stderr) {
        String out() { return new String(stdout, StandardCharsets.UTF_8).trim(); }
    }

    private HostGit() {}

    /** The defanged command line for a repository whose work tree is {@code work} and git directory {@code gitDir}. */
    static List<String> command(Path work, Path gitDir, List<String> args) {
        List<String> c = new ArrayList<>(List.of("git", "--git-dir=" + gitDir, "--work-tree=" + work,
                "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "core.untrackedCache=false",
                "-c", "safe.directory=" + work, "-c", "gc.auto=0", "-c", "maintenance.auto=false",
                "-c", "protocol.allow=never", "-c", "protocol.file.allow=always", "--no-pager"));
        c.addAll(args);
        return c;
    }

    static Result run(Path work, Path gitDir, List<String> args) throws IOException {
        return run(work, gitDir, args, Map.of(), null);
    }

    /** As {@link #run(Path, Path, List)}, with {@code extraEnv} added and standard input read from {@code stdin} (null: none). */
    static Result run(Path work, Path gitDir, List<String> args, Map<String, String> extraEnv, Path stdin) throws IOException {
        ProcessBuilder pb = new ProcessBuilder(command(work, gitDir, args)).directory(work.toFile());
        Map<String, String> env = pb.environment();
        env.keySet().removeIf(k -> k.startsWith("GIT_"));
        env.put("GIT_CONFIG_NOSYSTEM", "1");
        env.put("GIT_CONFIG_GLOBAL", "/dev/null");
        env.put("GIT_TERMINAL_PROMPT", "0");
        env.put("GIT_OPTIONAL_LOCKS", "0");
        env.put("LC_ALL", "C");
        env.putAll(extraEnv);
        Path out = Files.createTempFile("berth-git", ".out");
        Path err = Files.createTempFile("berth-git", ".err");
        try {
            Process p = pb.redirectInput(ProcessBuilder.Redirect.from(stdin == null ? new java.io.File("/dev/null") : stdin.toFile()))
                    .redirectOutput(out.toFile()).redirectError(err.toFile()).start();
            try {
                if (!p.waitFor(LIMIT_S, TimeUnit.SECONDS)) {
                    p.descendants().forEach(ProcessHandle::destroyForcibly);
                    p.destroyForcibly();
                    throw new IOException("git " + args.getFirst() + " took longer than " + LIMIT_S + " s");
                }
            } catch (InterruptedException e) {
                p.destroyForcibly();
                Thread.currentThread().interrupt();
                throw new java.io.InterruptedIOException("interrupted while git " + args.getFirst() + " ran");
            }
            byte[] e = Files.readAllBytes(err);
            String es = new String(e, 0, Math.min(e.length, 4096), StandardCharsets.UTF_8).trim();
            return new Result(p.exitValue(), Files.readAllBytes(out), es);
        } finally {
            Files.deleteIfExists(out);
            Files.deleteIfExists(err);
        }
    }

    /** Runs git and fails with its error output unless it exits 0. */
    static Result check(Path work, Path gitDir, List<String> args) throws IOException {
        Result r = run(work, gitDir, args);
        if (r.exit() != 0) throw new IOException("git " + String.join(" ", args) + " failed (exit " + r.exit() + "): " + r.stderr());
        return r;
    }

    /** Splits NUL-separated output (ls-files -z) into paths. */
    static List<String> nulSeparated(byte[] b) {
        List<String> out = new ArrayList<>();
        int start = 0;
        for (int i = 0; i < b.length; i++) {
            if (b[i] == 0) {
                if (i > start) out.add(new String(b, start, i - start, StandardCharsets.UTF_8));
                start = i + 1;
            }
        }
        if (start < b.length) out.add(new String(b, start, b.length - start, StandardCharsets.UTF_8));
        return out;
    }
}
