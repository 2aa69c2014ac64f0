package dev.berth.mcp;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * A real {@code java -jar berth.jar http} process on a free loopback port, for the end-to-end tests. Its log is
 * kept so a test can show it when something fails; {@link #close()} sends SIGTERM and waits for a clean exit.
 */
final class BerthHttp implements AutoCloseable {
    final Process process;
    final int port;
    final Path home;
    final String host;
    private final StringBuffer log = new StringBuffer();
    /** Completes when the log reader has read the process's output to its end. */
    private final CompletableFuture<Void> logEnded = new CompletableFuture<>();

    private BerthHttp(Process p, int port, Path home, String host) {
        this.process = p;
        this.port = port;
        this.home = home;
        this.host = host;
    }

    /** Starts the server with {@code configJson} (the port is set by this method) and waits until it listens. */
    static BerthHttp start(Path dir, String configJson, String... extra) throws IOException, InterruptedException {
        return start(dir, configJson, java.util.Map.of(), extra);
    }

    /** Like {@link #start(Path, String, String...)}, with extra environment variables for the server process. */
    static BerthHttp start(Path dir, String configJson, java.util.Map<String, String> env, String... extra)
            throws IOException, InterruptedException {
        return start(dir, configJson, env, "http", "127.0.0.1", freePort(), extra);
    }

    /** {@code berth <command>} (http or node) listening on {@code bind:port}. */
    static BerthHttp start(Path dir, String configJson, java.util.Map<String, String> env, String command, String bind, int port,
                           String... extra) throws IOException, InterruptedException {
        Path cfg = dir.resolve("berth.json");
        Files.writeString(cfg, configJson);
        // sandboxes run as their own uids and must traverse to their state under the home
        Files.setPosixFilePermissions(dir, java.nio.file.attribute.PosixFilePermissions.fromString("rwx--x--x"));
        Path home = Files.createDirectories(dir.resolve("home"));
        List<String> cmd = new ArrayList<>(List.of(McpBridge.javaBin(), "-jar", McpBridge.JAR.toString(), command,
                "--config", cfg.toString(), "--home", home.toString(), "--bind", bind, "--port", String.valueOf(port), "--isolation", "namespace"));
        cmd.addAll(List.of(extra));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        pb.environment().putAll(env);
        Process p = pb.start();
        p.getOutputStream().close();
        BerthHttp b = new BerthHttp(p, port, home, bind);
        CompletableFuture<Boolean> ready = new CompletableFuture<>();
        Thread.ofPlatform().daemon().start(() -> {
            try (var r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line; (line = r.readLine()) != null; ) {
                    b.log.append(line).append('\n');
                    if (line.startsWith("berth http listening on")) ready.complete(true);
                }
            } catch (IOException ignored) {
                // the process is gone
            }
            ready.complete(false);
            b.logEnded.complete(null);
        });
        try {
            if (!ready.get(120, TimeUnit.SECONDS)) throw new IOException("berth http exited before listening:\n" + b.log);
        } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
            String threads = threadDump(p);
            p.destroyForcibly();
            throw new IOException("berth http did not start listening in 120 s:\n" + b.log + "\nits threads:\n" + threads, e);
        }
        return b;
    }

    /** What the server's threads are doing (jcmd Thread.print), for a start that does not finish. */
    private static String threadDump(Process p) {
        try {
            Path jcmd = Path.of(McpBridge.javaBin()).resolveSibling("jcmd");
            Process d = new ProcessBuilder(jcmd.toString(), Long.toString(p.pid()), "Thread.print").redirectErrorStream(true).start();
            String out = new String(d.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            d.waitFor(30, TimeUnit.SECONDS);
            return out;
        } catch (IOException | InterruptedException x) {
            return "(no thread dump: " + x + ")";
        }
    }

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    String url(String path) {
        return "http://" + host + ":" + port + path;
    }

    String log() {
        return log.toString();
    }

    /** Sends SIGTERM; returns whether the server shut down cleanly (its last log line says so) within 30 s. */
    @Override
    public void close() throws InterruptedException {
        // Process.destroy() would also close our end of its output, losing the shutdown log; the handle only signals
        process.toHandle().destroy();
        if (!process.waitFor(30, TimeUnit.SECONDS)) process.destroyForcibly();
    }

    boolean stoppedCleanly() throws Exception {
        if (process.isAlive()) return false;
        logEnded.get(30, TimeUnit.SECONDS); // the output of an exited process ends: the reader has every line
        return log.toString().contains("berth http stopped");
    }
}
