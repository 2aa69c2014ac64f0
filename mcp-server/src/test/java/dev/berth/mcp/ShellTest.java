package dev.berth.mcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.berth.engine.Engine;
import dev.berth.engine.api.OpenRequest;
import dev.berth.engine.api.Tenant;
import dev.berth.engine.api.WorkspaceState;
import dev.berth.mcp.cli.Options;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@code berth shell} driven through a real terminal: a tmux session runs it against a parked namespace workspace,
 * types into it with {@code send-keys}, reads the pane with {@code capture-pane}, and resizes the window (tmux sends
 * the program SIGWINCH, as a terminal emulator does).
 */
class ShellTest {
    private final String session = "berth-shell-test-" + ProcessHandle.current().pid();
    private Path home;

    @AfterEach
    void cleanUp() throws Exception {
        tmux("kill-session", "-t", session);
        if (home != null) dev.berth.engine.spi.Trees.delete(home);
    }

    @Test
    void shell_inAParkedWorkspace_resumesIt_typesEchoesResizesAndExitsWithTheStatus() throws Exception {
        assumeTrue(tmux("-V").exitCode() == 0, "tmux is not installed (scripts/install-deps.sh installs it)");
        home = Files.createTempDirectory("berth-shell-");
        Options opts = new Options(home, "namespace", null, null, null, null, "auto", null);
        assumeTrue(Drivers.all(opts).stream().anyMatch(d -> d.name().equals("namespace") && d.probe().available()), "no namespace level here");
        try (Engine engine = Drivers.engine(opts)) {
            engine.open(Tenant.LOCAL, OpenRequest.persistent("sh1"));
            engine.park(Tenant.LOCAL, "sh1");
            assertEquals(WorkspaceState.PARKED, engine.info(Tenant.LOCAL, "sh1").state());
        }
        Path status = home.resolve("shell-exit");
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        String cmd = "'" + java + "' -cp '" + System.getProperty("java.class.path") + "' dev.berth.mcp.Main shell sh1 --home '" + home
                + "' --isolation namespace; echo $? > '" + status + "'; sleep 600";
        assertEquals(0, tmux("new-session", "-d", "-s", session, "-x", "100", "-y", "30", cmd).exitCode());
        String pane = until("a prompt", s -> s.contains("#") || s.contains("$"));
        tmux("send-keys", "-t", session, "echo hi-$((6*7)); stty size", "Enter");
        pane = until("the echo and the size", s -> s.contains("hi-42") && s.contains("30 100"));
        assertEquals(0, tmux("resize-window", "-t", session, "-x", "120", "-y", "40").exitCode());
        // the resize reaches the workspace through SIGWINCH and `berth shell`'s own look at the size: ask until it has
        boolean resized = false;
        for (long end = System.nanoTime() + 90_000_000_000L; !resized && System.nanoTime() < end; ) {
            tmux("send-keys", "-t", session, "clear; stty size", "Enter");
            resized = dev.berth.engine.Await.within(Duration.ofSeconds(3), () -> capture().contains("40 120"));
        }
        assertTrue(resized, "stty never saw the new size:\n" + capture());
        tmux("send-keys", "-t", session, "exit 7", "Enter");
        dev.berth.engine.Await.until("berth shell exits", Duration.ofSeconds(90), () -> Files.exists(status) && Files.size(status) > 0);
        assertEquals("7", Files.readString(status).strip(), "the command's exit status; pane: " + capture());
    }

    private String until(String what, java.util.function.Predicate<String> ok) throws Exception {
        String[] last = {""};
        boolean held = dev.berth.engine.Await.within(Duration.ofSeconds(90), () -> ok.test(last[0] = capture()));
        assertTrue(held, "the pane never showed " + what + ":\n" + last[0]);
        return last[0];
    }

    private String capture() throws Exception { return tmux("capture-pane", "-p", "-t", session).out(); }

    private record Result(int exitCode, String out) {}

    private static Result tmux(String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of("tmux"));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(30, TimeUnit.SECONDS)) p.destroyForcibly();
        return new Result(p.exitValue(), out);
    }
}
