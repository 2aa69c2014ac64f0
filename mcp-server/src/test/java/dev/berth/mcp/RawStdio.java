package dev.berth.mcp;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import tools.jackson.databind.JsonNode;

/**
 * {@code berth.jar stdio} driven byte by byte, for what no well-behaved client sends: raw lines in, every stdout line
 * parsed as one JSON-RPC message (anything else on stdout fails the test). Its stderr goes to the test's output.
 */
final class RawStdio implements AutoCloseable {
    final Process process;
    private final OutputStream in;
    private final BlockingQueue<Object> out = new LinkedBlockingQueue<>();
    private int nextId = 1_000_000;

    RawStdio(Path home, String... jvmArgs) throws IOException {
        this(home, ProcessBuilder.Redirect.INHERIT, List.of(jvmArgs), List.of("--isolation", "namespace"));
    }

    /** A server with {@code serverArgs} after {@code stdio --home HOME}, its stderr sent to {@code stderr}. */
    RawStdio(Path home, ProcessBuilder.Redirect stderr, List<String> jvmArgs, List<String> serverArgs) throws IOException {
        List<String> cmd = new ArrayList<>(List.of(McpBridge.javaBin()));
        cmd.addAll(jvmArgs);
        cmd.addAll(List.of("-jar", McpBridge.JAR.toString(), "stdio", "--home", home.toString()));
        cmd.addAll(serverArgs);
        process = new ProcessBuilder(cmd).redirectError(stderr).start();
        in = process.getOutputStream();
        Thread.ofPlatform().daemon().start(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line; (line = r.readLine()) != null; ) {
                    try {
                        out.add(McpBridge.JSON.readTree(line));
                    } catch (RuntimeException e) {
                        out.add(new AssertionError("stdout carried a line that is not JSON: " + line));
                    }
                }
            } catch (IOException ignored) {
                // the process is gone
            }
            out.add("EOF");
        });
    }

    /** Starts a server and completes the MCP handshake. */
    static RawStdio initialized(Path home, String... jvmArgs) throws IOException, InterruptedException {
        return initialized(new RawStdio(home, jvmArgs));
    }

    /** Completes the MCP handshake of a started server. */
    static RawStdio initialized(RawStdio s) throws IOException, InterruptedException {
        JsonNode init = s.request("initialize", Map.of("protocolVersion", "2025-06-18", "capabilities", Map.of(),
                "clientInfo", Map.of("name", "raw-stdio", "version", "1")));
        if (!init.has("result")) throw new AssertionError("initialize failed: " + init);
        s.sendLine("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
        return s;
    }

    /** Calls a tool and returns its structured result; fails when the call fails. */
    JsonNode ok(String tool, Map<String, Object> args) throws IOException, InterruptedException {
        JsonNode r = request("tools/call", Map.of("name", tool, "arguments", args));
        if (r.path("result").path("isError").asBoolean(true)) throw new AssertionError(tool + " failed: " + r);
        return r.path("result").path("structuredContent");
    }

    /** Sends a tool call without waiting for its answer (a run that stays in flight). */
    void callInFlight(String tool, Map<String, Object> args) throws IOException {
        sendLine(McpBridge.JSON.writeValueAsString(Map.of("jsonrpc", "2.0", "id", "inflight-" + nextId++, "method", "tools/call",
                "params", Map.of("name", tool, "arguments", args))));
    }

    void send(byte[] bytes) throws IOException {
        in.write(bytes);
        in.flush();
    }

    void sendLine(String line) throws IOException {
        send((line + "\n").getBytes(StandardCharsets.UTF_8));
    }

    /** Closes the server's stdin (a no-op when the server is gone already). */
    void closeInput() {
        try {
            in.close();
        } catch (IOException ignored) {
            // the pipe is broken: the server exited
        }
    }

    /** The next message from the server, skipping notifications; fails after {@code seconds}. */
    JsonNode next(int seconds) throws InterruptedException {
        while (true) {
            Object o = out.poll(seconds, TimeUnit.SECONDS);
            if (o == null) throw new AssertionError("no answer from the server in " + seconds + " s");
            if (o instanceof AssertionError e) throw e;
            if (o instanceof String) throw new AssertionError("the server closed stdout");
            JsonNode m = (JsonNode) o;
            if (!"2.0".equals(m.path("jsonrpc").asString())) throw new AssertionError("not JSON-RPC 2.0: " + m);
            if (m.has("method") && !m.has("id")) continue;
            return m;
        }
    }

    /** Sends a request with a fresh id and returns its answer (which must carry that id). */
    JsonNode request(String method, Object params) throws IOException, InterruptedException {
        int id = nextId++;
        sendLine(McpBridge.JSON.writeValueAsString(params == null ? Map.of("jsonrpc", "2.0", "id", id, "method", method)
                : Map.of("jsonrpc", "2.0", "id", id, "method", method, "params", params)));
        JsonNode m = next(120);
        if (m.path("id").asInt(-1) != id) throw new AssertionError("expected the answer to " + id + ", got " + m);
        return m;
    }

    /** ping answers {} and a real tool call (list_workspaces) succeeds: the session is alive. */
    void assertAlive() throws IOException, InterruptedException {
        JsonNode ping = request("ping", null);
        if (!ping.path("result").isObject()) throw new AssertionError("ping failed: " + ping);
        JsonNode list = request("tools/call", Map.of("name", "list_workspaces", "arguments", Map.of()));
        if (list.path("result").path("isError").asBoolean(true) || !list.path("result").path("structuredContent").has("workspaces")) {
            throw new AssertionError("list_workspaces failed: " + list);
        }
    }

    /** Waits for the process to exit after stdin closed; returns its exit code. */
    int awaitExit(int seconds) throws InterruptedException {
        if (!process.waitFor(seconds, TimeUnit.SECONDS)) throw new AssertionError("the server did not exit " + seconds + " s after stdin closed");
        return process.exitValue();
    }

    @Override
    public void close() throws IOException, InterruptedException {
        try {
            in.close();
        } catch (IOException ignored) {
            // closed already
        }
        // the server's stop is bounded at 60 s; killing it earlier would leave its mounts and hide why
        if (!process.waitFor(90, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            throw new IOException("berth did not exit within 90 s of its standard input closing; it was killed");
        }
    }
}
