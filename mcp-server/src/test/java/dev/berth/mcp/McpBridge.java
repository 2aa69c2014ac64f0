package dev.berth.mcp;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Drives a Berth server with the official MCP TypeScript SDK client (src/test/node/bridge.mjs), one JSON line per
 * request. Assertions stay in Java; the protocol work is done by the real client.
 */
final class McpBridge implements AutoCloseable {
    static final JsonMapper JSON = JsonMapper.builder().build();
    static final Path NODE_DIR = Path.of(System.getProperty("berth.node.dir", "src/test/node")).toAbsolutePath();
    static final Path JAR = Path.of(System.getProperty("berth.jar", "target/berth.jar")).toAbsolutePath();

    private final Process process;
    private final OutputStream in;
    private final BufferedReader out;
    /** The client's and the server's standard error, printed into the test's output when the bridge closes. */
    private final Path stderr;

    private McpBridge(List<String> cmd) throws IOException {
        this(cmd, Map.of());
    }

    private McpBridge(List<String> cmd, Map<String, String> env) throws IOException {
        if (!Files.isDirectory(NODE_DIR.resolve("node_modules/@modelcontextprotocol/sdk"))) {
            throw new IllegalStateException("the MCP TypeScript SDK is not installed: run `npm ci --prefix " + NODE_DIR + "`");
        }
        stderr = Files.createTempFile("berth-bridge-", ".err");
        ProcessBuilder pb = new ProcessBuilder(cmd).directory(NODE_DIR.toFile()).redirectError(stderr.toFile());
        pb.environment().putAll(env);
        process = pb.start();
        in = process.getOutputStream();
        out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
    }

    /** A bridge whose client spawns {@code java -jar berth.jar stdio --home HOME [extra...]}. */
    static McpBridge stdio(Path home, String... extra) throws IOException {
        List<String> cmd = new ArrayList<>(List.of("node", "bridge.mjs", "stdio", javaBin(), "-jar", JAR.toString(), "stdio",
                "--home", home.toString()));
        cmd.addAll(List.of(extra));
        return new McpBridge(cmd);
    }

    /**
     * {@code args} plus an operator config (written into {@code home}) that turns the warm pool off: for tests that
     * count a server's sandboxes or workspace directories, which the default pool's members would add to.
     */
    static String[] poolOff(Path home, String... args) throws IOException {
        java.nio.file.Files.createDirectories(home);
        Path cfg = home.resolve("pool-off.json");
        java.nio.file.Files.writeString(cfg, "{\"pool\": {\"size\": 0}}");
        List<String> out = new ArrayList<>(List.of(args));
        out.addAll(List.of("--config", cfg.toString()));
        return out.toArray(String[]::new);
    }

    /**
     * A bridge whose client spawns {@code command} as a client config would, with {@code env} added to the bridge's
     * environment (the TypeScript client passes only PATH, HOME and a few others on to the server).
     */
    static McpBridge stdioCommand(List<String> command, Map<String, String> env) throws IOException {
        List<String> cmd = new ArrayList<>(List.of("node", "bridge.mjs", "stdio"));
        cmd.addAll(command);
        return new McpBridge(cmd, env);
    }

    /** A bridge whose client speaks Streamable HTTP to {@code url}, with a bearer token when not null. */
    static McpBridge http(String url, String token) throws IOException {
        return remote("http", url, token);
    }

    /** A bridge whose client speaks the legacy HTTP+SSE transport; {@code url} is the SSE endpoint. */
    static McpBridge sse(String url, String token) throws IOException {
        return remote("sse", url, token);
    }

    private static McpBridge remote(String mode, String url, String token) throws IOException {
        List<String> cmd = new ArrayList<>(List.of("node", "bridge.mjs", mode, url));
        if (token != null) cmd.add(token);
        return new McpBridge(cmd);
    }

    static String javaBin() {
        return ProcessHandle.current().info().command().orElse("java");
    }

    JsonNode send(Map<String, Object> request) throws IOException {
        in.write((JSON.writeValueAsString(request) + "\n").getBytes(StandardCharsets.UTF_8));
        in.flush();
        String line = out.readLine();
        if (line == null) throw new IOException("the MCP client bridge exited");
        return JSON.readTree(line);
    }

    JsonNode connect() throws IOException {
        JsonNode r = send(Map.of("op", "connect"));
        if (!r.path("ok").asBoolean()) throw new IOException("connect failed: " + r);
        return r;
    }

    /** Connects declaring the roots capability; roots/list answers {@code roots} (absolute directories) as file: URIs. */
    JsonNode connectWithRoots(List<String> roots) throws IOException {
        JsonNode r = send(Map.of("op", "connect", "roots", roots));
        if (!r.path("ok").asBoolean()) throw new IOException("connect failed: " + r);
        return r;
    }

    /** Connects declaring the elicitation capability; the client answers per {@link #elicitAnswer} (default decline). */
    JsonNode connectWithElicitation() throws IOException {
        JsonNode r = send(Map.of("op", "connect", "elicitation", true));
        if (!r.path("ok").asBoolean()) throw new IOException("connect failed: " + r);
        return r;
    }

    /**
     * How the client answers the next elicitation requests: an ElicitResult map ({@code action}, {@code content}), or
     * {@code {"hang": true}} (never), or {@code {"error": "..."}} (a JSON-RPC error).
     */
    void elicitAnswer(Map<String, Object> answer) throws IOException {
        JsonNode r = send(Map.of("op", "elicit", "answer", answer));
        if (!r.path("ok").asBoolean()) throw new IOException("elicit failed: " + r);
    }

    /** The elicitation requests (their params) the client received since the last call. */
    JsonNode elicitations() throws IOException {
        return send(Map.of("op", "elicitations")).path("requests");
    }

    /** Calls a tool; returns the CallToolResult (content, structuredContent, isError). */
    JsonNode call(String tool, Map<String, Object> args) throws IOException {
        JsonNode r = send(Map.of("op", "call", "name", tool, "args", args));
        if (!r.path("ok").asBoolean()) throw new IOException("call " + tool + " failed in the client: " + r.path("error").asString());
        return r.path("result");
    }

    /** Calls a tool that must succeed; returns its structured content. */
    JsonNode ok(String tool, Map<String, Object> args) throws IOException {
        JsonNode r = call(tool, args);
        if (r.path("isError").asBoolean()) throw new AssertionError(tool + " failed: " + r);
        return r.path("structuredContent");
    }

    /** Calls a tool that must succeed, letting the client wait up to {@code timeoutMs} (default 10 min). */
    JsonNode okWithin(String tool, Map<String, Object> args, long timeoutMs) throws IOException {
        JsonNode r = send(Map.of("op", "call", "name", tool, "args", args, "timeoutMs", timeoutMs));
        if (!r.path("ok").asBoolean()) throw new IOException("call " + tool + " failed in the client: " + r.path("error").asString());
        if (r.path("result").path("isError").asBoolean()) throw new AssertionError(tool + " failed: " + r);
        return r.path("result").path("structuredContent");
    }

    /** Calls a tool with a progress token; returns the whole answer (result and progress messages). */
    JsonNode callWithProgress(String tool, Map<String, Object> args) throws IOException {
        JsonNode r = send(Map.of("op", "call", "name", tool, "args", args, "progress", true));
        if (!r.path("ok").asBoolean()) throw new IOException("call " + tool + " failed in the client: " + r.path("error").asString());
        return r;
    }

    @Override
    public void close() throws IOException {
        in.close();
        try {
            // a clean stop parks every persistent workspace (a microVM writes its memory out) and closes the
            // ephemeral ones, each bounded by the engine at 60 s and all at once; killing the server earlier (this
            // waited 30 s) left a workspace's disk mounted under a loaded machine, which then failed the suite's
            // clean-up instead of saying what happened
            if (!process.waitFor(120, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                throw new IOException("berth did not exit within 120 s of its standard input closing; it was killed");
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        } finally {
            // into failsafe-reports/<class>-output.txt: what the server said about its stop is there for a failure
            String err = Files.readString(stderr, StandardCharsets.UTF_8);
            String tail = err.length() > 8192 ? "..." + err.substring(err.length() - 8192) : err;
            System.out.println("--- stderr of the MCP client bridge and its server:\n" + tail);
            Files.deleteIfExists(stderr);
        }
    }
}
