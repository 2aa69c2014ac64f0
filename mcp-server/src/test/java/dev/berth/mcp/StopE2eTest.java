package dev.berth.mcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import tools.jackson.databind.JsonNode;

/**
 * A server's stop (issue 33), on the namespace level and for the first case on the microVM level too: with commands running it exits within its bound, says what it
 * did on stderr, leaves nothing mounted or running, and the next server adopts what it parked; a command that
 * ignores SIGTERM is killed after the grace period; a second SIGTERM while stopping takes the fast path.
 */
class StopE2eTest {
    /** The engine's stop bound (WorkspaceStop.BOUND) and grace (WorkspaceStop.TERM_GRACE), in milliseconds. */
    private static final long BOUND_MS = 60_000;
    private static final long GRACE_MS = 1_000;

    private static RawStdio server(Path home, Path stderr) throws Exception {
        return server(home, stderr, "namespace");
    }

    private static RawStdio server(Path home, Path stderr, String isolation) throws Exception {
        String[] level = isolation.equals("microvm") ? new String[] {"--isolation", "microvm", "--microvm-image", "test"}
                : new String[] {"--isolation", isolation};
        return RawStdio.initialized(new RawStdio(home, ProcessBuilder.Redirect.appendTo(stderr.toFile()), List.of(),
                List.of(McpBridge.poolOff(home, level))));
    }

    private static long stopMillis(RawStdio s, int expectedExit) throws InterruptedException {
        long t0 = System.nanoTime();
        s.closeInput();
        assertEquals(expectedExit, s.awaitExit(90));
        return (System.nanoTime() - t0) / 1_000_000;
    }

    private static void finish(Path home, Path... logs) throws Exception {
        HomeLeaks.assertNone(home);
        dev.berth.engine.spi.Trees.delete(home);
        for (Path l : logs) {
            System.out.println("--- berth's stderr (" + l.getFileName() + "):\n" + Files.readString(l)); // for whoever reads a failure
            Files.deleteIfExists(l);
        }
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"namespace", "gvisor", "microvm"})
    void endOfStdin_commandsRunningInPersistentAndEphemeral_exitsCleanAndNextServerAdopts(String isolation) throws Exception {
        Path home = Files.createTempDirectory("berth-stop-");
        Path err = Files.createTempFile("berth-stop-", ".log");
        Path err2 = Files.createTempFile("berth-stop-", ".log");
        String keep;
        try (RawStdio s = server(home, err, isolation)) {
            keep = s.ok("open_workspace", Map.of("name", "keep")).path("workspace").asString();
            String eph = s.ok("open_workspace", Map.of()).path("workspace").asString();
            s.ok("run", Map.of("workspace", "keep", "command", "echo kept > kept.txt"));
            s.ok("run", Map.of("workspace", "keep", "background", true, "command", "sleep 600"));
            s.ok("run", Map.of("workspace", eph, "background", true, "command", "sleep 600"));
            s.callInFlight("run", Map.of("workspace", "keep", "command", "sleep 600"));
            s.callInFlight("run", Map.of("workspace", eph, "command", "sleep 600"));
            Thread.sleep(1_000); // the two foreground runs are under way
            long ms = stopMillis(s, 0);
            assertTrue(ms < BOUND_MS, "the stop took " + ms + " ms, over its bound");
            String log = Files.readString(err);
            // the same rule on every level: parked with memory where the level keeps it
            String kept = isolation.equals("microvm") ? "keep memory kept" : "keep files only";
            assertTrue(log.contains("berth: stopping: parked 1 workspace (" + kept + "), closed 1 ephemeral, stopped "), log);
        }
        HomeLeaks.assertNone(home);
        try (RawStdio s = server(home, err2, isolation)) {
            JsonNode list = s.ok("list_workspaces", Map.of()).path("workspaces");
            assertEquals(1, list.size(), list::toString);
            assertEquals(keep, list.get(0).path("workspace").asString());
            assertEquals("parked", list.get(0).path("state").asString());
            JsonNode r = s.ok("run", Map.of("workspace", "keep", "command", "cat kept.txt"));
            assertEquals("kept\n", r.path("stdout").asString());
            assertTrue(r.path("resumed").asBoolean(), r::toString);
            stopMillis(s, 0);
        }
        finish(home, err, err2);
    }

    @Test
    void endOfStdin_commandIgnoringSigterm_isKilledAfterTheGrace() throws Exception {
        Path home = Files.createTempDirectory("berth-stop-term-");
        Path err = Files.createTempFile("berth-stop-", ".log");
        try (RawStdio s = server(home, err)) {
            String eph = s.ok("open_workspace", Map.of()).path("workspace").asString();
            s.ok("run", Map.of("workspace", eph, "background", true, "command", "trap '' TERM; sleep 600"));
            long ms = stopMillis(s, 0);
            assertTrue(ms >= GRACE_MS - 500 && ms < 30_000, "stopped in " + ms + " ms: expected the grace of " + GRACE_MS + " ms, then a kill");
            String log = Files.readString(err);
            assertTrue(log.contains("closed 1 ephemeral, stopped 1 command;"), log);
        }
        finish(home, err);
    }

    @Test
    void secondSigterm_whileStopping_takesTheFastPath() throws Exception {
        Path home = Files.createTempDirectory("berth-stop-fast-");
        Path err = Files.createTempFile("berth-stop-", ".log");
        Path err2 = Files.createTempFile("berth-stop-", ".log");
        try (RawStdio s = server(home, err)) {
            s.ok("open_workspace", Map.of("name", "fast"));
            s.ok("run", Map.of("workspace", "fast", "command", "echo here > here.txt"));
            // ignores SIGTERM: the clean stop spends its grace on it, the second signal cuts that short
            s.ok("run", Map.of("workspace", "fast", "background", true, "command", "trap '' TERM; sleep 600"));
            long t0 = System.nanoTime();
            s.process.toHandle().destroy();
            // the second signal as soon as the clean stop has begun, well inside its grace for the command
            dev.berth.engine.Await.until("the clean stop began", java.time.Duration.ofSeconds(10),
                    () -> Files.readString(err).contains("berth: SIGTERM: stopping"));
            s.process.toHandle().destroy();
            assertTrue(s.process.waitFor(30, TimeUnit.SECONDS), "no exit 30 s after the second SIGTERM");
            long ms = (System.nanoTime() - t0) / 1_000_000;
            assertEquals(143, s.process.exitValue());
            String log = Files.readString(err);
            assertTrue(log.contains("berth: second SIGTERM while stopping: fast stop"), log);
            // which of the two paths prints its report last is a race (the clean stop's grace is 1 s); what must hold
            // is the bound, the exit status, nothing left behind and a recoverable workspace, checked here and below
            assertTrue(ms < 15_000, "the fast path took " + ms + " ms");
        }
        HomeLeaks.assertNone(home);
        try (RawStdio s = server(home, err2)) {
            JsonNode r = s.ok("run", Map.of("workspace", "fast", "command", "cat here.txt"));
            assertEquals("here\n", r.path("stdout").asString(), "the next server recovers the workspace as after a crash");
            stopMillis(s, 0);
        }
        finish(home, err, err2);
    }

    /**
     * End of stdin to exit with three persistent workspaces open and a command running in each, within the bound, the
     * figure printed ({@code STOP-BENCH}). Issue 33's figures for 0 and 1 workspace came from this case too; a server
     * with none stops in every other case here, one with one workspace in the first.
     */
    @Test
    void endOfStdin_workspacesWithACommandRunning_stopTime() throws Exception {
        int workspaces = 3;
        Path home = Files.createTempDirectory("berth-stop-bench-");
        Path err = Files.createTempFile("berth-stop-", ".log");
        try (RawStdio s = server(home, err)) {
            for (int i = 0; i < workspaces; i++) {
                s.ok("open_workspace", Map.of("name", "w" + i));
                s.ok("run", Map.of("workspace", "w" + i, "background", true, "command", "sleep 600"));
            }
            long ms = stopMillis(s, 0);
            System.out.println("STOP-BENCH namespace: " + workspaces + " workspace(s) with a command running: end of stdin to exit "
                    + ms + " ms; " + Files.readString(err).lines().filter(l -> l.startsWith("berth: stopping:")).findFirst().orElse("(no report)"));
            assertTrue(ms < BOUND_MS, "took " + ms + " ms");
        }
        finish(home, err);
    }
}
