package dev.berth.mcp;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** The real curl, for tests that look at HTTP as a user's tool sees it. */
final class Curl {
    private Curl() {}

    /**
     * Runs {@code curl -sS --max-time 60 ARGS} and returns what it printed (with {@code -D -} the response heads come
     * first) and, second, the status code.
     */
    static String[] call(String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of("curl", "-sS", "--max-time", "60", "-w", "\n%{http_code}"));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(90, TimeUnit.SECONDS));
        int nl = out.lastIndexOf('\n');
        return new String[] {out.substring(0, Math.max(nl, 0)), out.substring(nl + 1)};
    }
}
