package dev.berth.mcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/**
 * The stdio wire itself, byte for byte as a client reads it: stdout carries nothing but JSON-RPC, every progress
 * notification of a run precedes its result (so a client never sees output after the answer), and the server exits
 * by itself when stdin closes.
 */
class StdioWireE2eTest {
    @Test
    void run_progressNotificationsAllPrecedeTheResultOnTheWire() throws Exception {
        Path home = Files.createTempDirectory("berth-wire-");
        Process p = new ProcessBuilder(McpBridge.javaBin(), "-jar", McpBridge.JAR.toString(), "stdio", "--home", home.toString(),
                "--isolation", "namespace").redirectError(ProcessBuilder.Redirect.DISCARD).start();
        try {
            OutputStream in = p.getOutputStream();
            BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
            send(in, Map.of("jsonrpc", "2.0", "id", 0, "method", "initialize", "params", Map.of("protocolVersion", "2025-06-18",
                    "capabilities", Map.of(), "clientInfo", Map.of("name", "wire-test", "version", "1"))));
            assertEquals(0, read(out).path("id").asInt());
            send(in, Map.of("jsonrpc", "2.0", "method", "notifications/initialized"));
            send(in, Map.of("jsonrpc", "2.0", "id", 1, "method", "tools/call", "params", Map.of("name", "open_workspace", "arguments", Map.of())));
            String ws = read(out).path("result").path("structuredContent").path("workspace").asString();
            for (int round = 0; round < 5; round++) {
                send(in, Map.of("jsonrpc", "2.0", "id", 10 + round, "method", "tools/call", "params", Map.of("name", "run",
                        "arguments", Map.of("workspace", ws, "command", "for i in 1 2 3; do echo line$i; sleep 0.2; done; echo oops >&2"),
                        "_meta", Map.of("progressToken", "tok-" + round))));
                List<String> seen = new ArrayList<>();
                double last = 0;
                while (true) {
                    JsonNode m = read(out);
                    if (m.has("id")) {
                        assertEquals(10 + round, m.path("id").asInt());
                        break;
                    }
                    assertEquals("notifications/progress", m.path("method").asString());
                    assertEquals("tok-" + round, m.path("params").path("progressToken").asString());
                    double progress = m.path("params").path("progress").asDouble();
                    assertTrue(progress > last, "progress must increase: " + progress + " after " + last);
                    last = progress;
                    seen.add(m.path("params").path("message").asString());
                }
                assertEquals("line1\nline2\nline3\n[stderr] oops\n", String.join("", seen));
            }
            in.close();
            assertTrue(p.waitFor(30, TimeUnit.SECONDS), "server did not exit after stdin closed");
            assertEquals(0, p.exitValue());
        } finally {
            p.destroyForcibly();
            HomeLeaks.assertNone(home); // a leak is named here, before the delete
            dev.berth.engine.spi.Trees.delete(home);
        }
    }

    private static void send(OutputStream in, Object msg) throws Exception {
        in.write((McpBridge.JSON.writeValueAsString(msg) + "\n").getBytes(StandardCharsets.UTF_8));
        in.flush();
    }

    /** Every stdout line must be one JSON-RPC message. */
    private static JsonNode read(BufferedReader out) throws Exception {
        String line = out.readLine();
        if (line == null) throw new AssertionError("server closed stdout");
        JsonNode m = McpBridge.JSON.readTree(line);
        assertEquals("2.0", m.path("jsonrpc").asString(), "non-JSON-RPC output on stdout: " + line);
        return m;
    }
}
