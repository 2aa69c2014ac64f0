package dev.berth.engine.agent;

import dev.berth.engine.Await;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/** Runs the real agent binary unsandboxed, connected back to a unix socket this harness listens on. */
final class AgentHarness implements AutoCloseable {
    static final Path BINARY = Path.of("target/classes/berth/agent/berth-agent");

    final Path dir;
    final int proxyPort;
    private final ServerSocketChannel server;
    final Process process;

    AgentHarness() throws IOException {
        dir = Files.createTempDirectory("berth-agent-test");
        Path sock = dir.resolve("agent.sock");
        server = ServerSocketChannel.open(StandardProtocolFamily.UNIX);
        server.bind(UnixDomainSocketAddress.of(sock));
        try (ServerSocket s = new ServerSocket(0)) {
            proxyPort = s.getLocalPort();
        }
        process = new ProcessBuilder(BINARY.toAbsolutePath().toString(), "--connect", "unix:" + sock, "--proxy-port", Integer.toString(proxyPort))
                .redirectOutput(dir.resolve("agent.out").toFile())
                .redirectError(dir.resolve("agent.log").toFile())
                .start();
    }

    /** Accepts the agent's next connection and completes the HELLO exchange. */
    AgentClient accept() throws Exception {
        return AgentClient.handshake(acceptChannel(), Duration.ofSeconds(5));
    }

    /** Accepts the agent's next connection without any protocol: for tests that speak frames themselves. */
    FrameChannel acceptRaw() throws Exception {
        return new FrameChannel(acceptChannel());
    }

    private SocketChannel acceptChannel() throws Exception {
        CompletableFuture<SocketChannel> ch = CompletableFuture.supplyAsync(() -> {
            try {
                return server.accept();
            } catch (IOException e) {
                throw new RuntimeException(e);
            }
        });
        SocketChannel c;
        try {
            c = ch.get(30, TimeUnit.SECONDS);
        } catch (java.util.concurrent.TimeoutException e) {
            throw new AssertionError("agent did not connect within 10 s; log:\n" + log(), e);
        }
        return c;
    }

    String log() {
        try {
            return Files.readString(dir.resolve("agent.log"));
        } catch (IOException e) {
            return "(no log: " + e + ")";
        }
    }

    @Override
    public void close() throws IOException {
        process.destroy(); // SIGTERM: a clean exit, so sanitizer builds can report leaks
        try {
            if (!process.waitFor(2, TimeUnit.SECONDS)) process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        server.close();
        try (Stream<Path> s = Files.walk(dir)) {
            s.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }

    /** Whether a pid is a live (non-zombie) process. */
    static boolean alive(long pid) {
        try {
            String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
            char state = stat.substring(stat.lastIndexOf(')') + 2).charAt(0);
            return state != 'Z' && state != 'X';
        } catch (IOException e) {
            return false;
        }
    }

    static void awaitDead(long pid, Duration within) throws Exception {
        if (!Await.within(within, () -> !alive(pid))) {
            throw new AssertionError("pid " + pid + " still alive after " + within.toMillis() + " ms");
        }
    }

    /** Collected output of one run. */
    static class Output implements ExecListener {
        final ByteArrayOutputStream out = new ByteArrayOutputStream();
        final ByteArrayOutputStream err = new ByteArrayOutputStream();

        @Override
        public synchronized void onStdout(byte[] data) { out.writeBytes(data); }

        @Override
        public synchronized void onStderr(byte[] data) { err.writeBytes(data); }

        synchronized String stdout() { return out.toString(StandardCharsets.UTF_8); }

        synchronized String stderr() { return err.toString(StandardCharsets.UTF_8); }

        synchronized byte[] stdoutBytes() { return out.toByteArray(); }
    }

    static ExecRequest sh(String script) {
        return new ExecRequest(List.of("/bin/sh", "-c", script), List.of("PATH=/usr/bin:/bin"), "/", 0, false);
    }
}
