package dev.berth.mcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import tools.jackson.databind.JsonNode;

/**
 * The {@code berth} launcher, installed by {@code berth launcher --bin-dir}, starts the server on Java 25 although
 * the default {@code java} on PATH is an unrelated old one (a fake that claims JDK 17 and fails) and JAVA_HOME names a
 * real JDK 17: as a client config that says {@code berth stdio} would start it.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class LauncherE2eTest {
    static final Path JDK17 = Path.of("/usr/lib/jvm/java-17-openjdk-amd64");
    Path dir;
    Path bin;
    String path;

    @BeforeAll
    void install() throws Exception {
        dir = Files.createTempDirectory("berth-launcher-");
        bin = dir.resolve("bin");
        Process p = new ProcessBuilder(McpBridge.javaBin(), "-jar", McpBridge.JAR.toString(), "launcher", "--bin-dir", bin.toString())
                .redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS));
        assertEquals(0, p.exitValue(), out);
        assertTrue(out.contains("installed " + bin.resolve("berth")), out);
        Path fake = Files.createDirectories(dir.resolve("fake-java"));
        Files.writeString(fake.resolve("java"), "#!/bin/sh\necho 'openjdk version \"17.0.2\" 2022-01-18' >&2\nexit 1\n");
        Files.setPosixFilePermissions(fake.resolve("java"), PosixFilePermissions.fromString("rwxr-xr-x"));
        // the fake java first, then the launcher, then the rest (node must stay reachable for the bridge)
        path = fake + ":" + bin + ":" + System.getenv("PATH");
    }

    @AfterAll
    void cleanUp() throws IOException {
        HomeLeaks.assertNone(dir); // a leak is named here, before the delete
        dev.berth.engine.spi.Trees.delete(dir);
    }

    private ProcessBuilder launcher(String... args) {
        List<String> cmd = new java.util.ArrayList<>(List.of("berth"));
        cmd.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(cmd);
        pb.environment().put("PATH", path);
        pb.environment().remove("BERTH_JAVA_HOME");
        if (Files.isDirectory(JDK17)) pb.environment().put("JAVA_HOME", JDK17.toString());
        else pb.environment().remove("JAVA_HOME");
        return pb.redirectErrorStream(true);
    }

    @Test
    void version_namesTheBuildTheJava25RuntimeAndTheProtocol_despiteAnOldDefaultJava() throws Exception {
        // ProcessBuilder looks the command up on the test's PATH, not the child's: name the launcher by path
        ProcessBuilder pb = launcher("version");
        pb.command().set(0, bin.resolve("berth").toString());
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS));
        assertEquals(0, p.exitValue(), out);
        assertTrue(out.matches("(?s)berth \\d+\\.\\d+\\.\\d+\\S*, built \\d{4}-\\d\\d-\\d\\dT.*"), out); // the jar's version and build time
        assertTrue(out.contains("\njava 25") || out.matches("(?s).*\\njava 2[5-9].*"), out);
        assertTrue(out.contains("mcp protocol 2025-11-25"), out);
    }

    @Test
    void stdio_throughTheLauncherOnPath_servesARealClient() throws Exception {
        Path home = Files.createDirectories(dir.resolve("home"));
        try (McpBridge mcp = McpBridge.stdioCommand(List.of("berth", "stdio", "--home", home.toString(), "--isolation", "namespace"),
                Map.of("PATH", path))) {
            JsonNode hello = mcp.connect();
            assertEquals("berth", hello.path("serverInfo").path("name").asString());
            JsonNode list = mcp.ok("list_workspaces", Map.of());
            assertTrue(list.has("workspaces"), list::toString);
        }
    }

    @Test
    void noSuitableJava_saysWhereItLooked() throws Exception {
        // a copy of the launcher whose only candidates are unsuitable: no /usr/lib/jvm, no runtime/ next to the jar
        String script = Files.readString(bin.resolve("berth")).replace("/usr/lib/jvm/*", dir.resolve("no-jvms").toString() + "/*");
        Path copy = dir.resolve("berth-nojava");
        Files.writeString(copy, script);
        Files.setPosixFilePermissions(copy, PosixFilePermissions.fromString("rwxr-xr-x"));
        ProcessBuilder pb = launcher("version");
        pb.command().set(0, copy.toString());
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS));
        assertEquals(127, p.exitValue(), out);
        assertTrue(out.contains("no Java 25 or later found"), out);
    }
}
