package dev.berth.mcp;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.WebSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import tools.jackson.databind.JsonNode;

/**
 * Debian's Chromium, headless, driven over the Chrome DevTools Protocol: opens a page and evaluates an expression
 * (a promise is awaited) in it. For tests that need a real browser (WebSocket from a page script).
 */
final class HeadlessChromium implements AutoCloseable {
    private final Process process;
    private final Path profile;
    private final String devtools;

    HeadlessChromium(Path dir, String url) throws IOException {
        this(dir, url, new String[0]);
    }

    /** With extra command-line flags (e.g. {@code --host-resolver-rules=MAP *.previews.test 127.0.0.1}). */
    HeadlessChromium(Path dir, String url, String... flags) throws IOException {
        profile = Files.createTempDirectory(dir, "chromium-profile");
        String bin = Files.isExecutable(Path.of("/usr/bin/chromium")) ? "/usr/bin/chromium" : "chromium";
        java.util.List<String> cmd = new java.util.ArrayList<>(java.util.List.of(bin, "--headless", "--no-sandbox", "--disable-gpu",
                "--no-first-run", "--user-data-dir=" + profile, "--remote-debugging-port=0"));
        cmd.addAll(java.util.List.of(flags));
        cmd.add(url);
        process = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        BufferedReader err = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
        String found = null;
        StringBuilder log = new StringBuilder();
        for (String line; (line = err.readLine()) != null; ) {
            log.append(line).append('\n');
            int i = line.indexOf("DevTools listening on ws://");
            if (i >= 0) {
                found = line.substring(i + "DevTools listening on ".length()).strip();
                break;
            }
        }
        if (found == null) throw new IOException("chromium did not start its DevTools endpoint:\n" + log);
        devtools = found;
        Thread.ofVirtual().start(() -> { // keep draining its output so it never blocks on a full pipe
            try {
                err.transferTo(java.io.Writer.nullWriter());
            } catch (IOException ignored) {
            }
        });
    }

    /**
     * Evaluates {@code expression} in the first page (awaiting a promise) and returns its value as a string. When the
     * page navigated meanwhile (a redirect, e.g. the preview token swapped for a cookie), its execution context is gone:
     * evaluated again in the new one (at most 20 times).
     */
    String evaluate(String expression, Duration timeout) throws Exception {
        String r = evaluateOnce(expression, timeout);
        for (int i = 0; i < 20 && r.contains("Execution context was destroyed"); i++) r = evaluateOnce(expression, timeout);
        return r;
    }

    private String evaluateOnce(String expression, Duration timeout) throws Exception {
        URI browser = URI.create(devtools);
        HttpClient http = HttpClient.newHttpClient();
        String list = http.send(HttpRequest.newBuilder(URI.create("http://" + browser.getRawAuthority() + "/json/list")).build(),
                HttpResponse.BodyHandlers.ofString()).body();
        String pageWs = null;
        for (JsonNode t : McpBridge.JSON.readTree(list)) {
            if (t.path("type").asString().equals("page")) pageWs = t.path("webSocketDebuggerUrl").asString();
        }
        if (pageWs == null) throw new IOException("no page target: " + list);
        CompletableFuture<String> answer = new CompletableFuture<>();
        StringBuilder buf = new StringBuilder();
        WebSocket ws = http.newWebSocketBuilder().buildAsync(URI.create(pageWs), new WebSocket.Listener() {
            @Override
            public CompletionStage<?> onText(WebSocket w, CharSequence data, boolean last) {
                buf.append(data);
                if (last) {
                    JsonNode m = McpBridge.JSON.readTree(buf.toString());
                    buf.setLength(0);
                    if (m.path("id").asInt() == 1) answer.complete(m.toString());
                }
                w.request(1);
                return null;
            }
        }).get(30, TimeUnit.SECONDS);
        String cmd = McpBridge.JSON.writeValueAsString(Map.of("id", 1, "method", "Runtime.evaluate",
                "params", Map.of("expression", expression, "awaitPromise", true, "returnByValue", true)));
        ws.sendText(cmd, true);
        String raw = answer.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        ws.abort();
        JsonNode r = McpBridge.JSON.readTree(raw).path("result").path("result");
        return r.path("value").isMissingNode() ? raw : r.path("value").asString();
    }

    @Override
    public void close() throws IOException {
        process.destroy();
        try {
            if (!process.waitFor(10, TimeUnit.SECONDS)) process.destroyForcibly();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
