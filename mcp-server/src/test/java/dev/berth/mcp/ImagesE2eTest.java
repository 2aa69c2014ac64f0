package dev.berth.mcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.berth.engine.image.OciFixture;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/**
 * Bring your own image, end to end: `berth image pull` (a real registry on loopback, fed by skopeo from an image
 * umoci wrote) and `berth image import` (a docker-archive) as real CLI processes, then `berth http` serving two
 * tenants through the official TypeScript MCP client: the one granted the image opens a workspace on it and runs
 * the image's files; the other is refused with the reason; `berth image rm` refuses an image in use.
 */
class ImagesE2eTest {

    record Cli(int exit, String out) {}

    static Cli berth(Path home, String... args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of(McpBridge.javaBin(), "-jar", McpBridge.JAR.toString()));
        cmd.addAll(List.of(args));
        cmd.addAll(List.of("--home", home.toString()));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        p.getOutputStream().close();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        return new Cli(p.waitFor(), out);
    }

    @Test
    void pullImportOpenAndGrant_throughTheCliAndMcp() throws Exception {
        assumeTrue(OciFixture.missingTools() == null, OciFixture::missingTools);
        Path dir = Files.createTempDirectory("berth-images-e2e-");
        Path home = Files.createDirectories(dir.resolve("home"));
        try (OciFixture oci = new OciFixture(Files.createDirectories(dir.resolve("oci")))) {
            Path layout = oci.busyboxLayout();
            String ref = oci.push(layout, oci.startRegistry(), "berth/tiny");

            Cli pull = berth(home, "image", "pull", ref, "--name", "tiny", "--unsafe-plain-http");
            assertEquals(0, pull.exit(), pull.out());
            assertTrue(pull.out().contains("imported tiny = sha256:"), pull.out());
            Cli imp = berth(home, "image", "import", oci.dockerArchive(layout).toString(), "--name", "tiny-archive");
            assertEquals(0, imp.exit(), imp.out());
            Cli bad = berth(home, "image", "import", dir.resolve("nowhere").toString(), "--name", "x");
            assertEquals(1, bad.exit(), bad.out());
            assertTrue(bad.out().contains("no OCI image layout directory or image archive at"), bad.out());
            Cli list = berth(home, "image", "list");
            assertTrue(list.out().contains("tiny ") && list.out().contains("tiny-archive"), list.out());

            try (BerthHttp server = BerthHttp.start(dir, """
                    {"auth": {"tokens": [{"tenant": "alice", "sha256": "%s"}, {"tenant": "bob", "sha256": "%s"}]},
                     "tenants": {"alice": {"images": ["tiny"]}, "bob": {}}}
                    """.formatted(BearerAuthenticatorTest.sha256("alice-token"), BearerAuthenticatorTest.sha256("bob-token")));
                 McpBridge alice = McpBridge.http(server.url("/mcp"), "alice-token");
                 McpBridge bob = McpBridge.http(server.url("/mcp"), "bob-token")) {
                alice.connect();
                bob.connect();
                JsonNode listed = HttpE2eTest.ok(alice, "list_workspaces", Map.of());
                assertEquals(1, listed.path("images").size(), listed.toString());
                assertEquals("tiny", listed.path("images").get(0).path("name").asString());
                assertEquals(0, HttpE2eTest.ok(bob, "list_workspaces", Map.of()).path("images").size());

                JsonNode ws = HttpE2eTest.ok(alice, "open_workspace", Map.of("image", "tiny"));
                assertEquals("tiny", ws.path("image").path("name").asString());
                assertTrue(ws.path("image").path("digest").asString().startsWith("sha256:"), ws.toString());
                JsonNode run = HttpE2eTest.ok(alice, "run", Map.of("workspace", ws.path("workspace").asString(),
                        "command", "cat /etc/os-release; echo \"$GREETING\"; pwd"));
                assertEquals("ID=" + OciFixture.MARKER + "\nhello from the config\n/srv/app\n", run.path("stdout").asString());

                String refused = HttpE2eTest.toolError(bob, "open_workspace", Map.of("image", "tiny"));
                assertTrue(refused.contains("tenant 'bob' is not granted image 'tiny'"), refused);
                refused = HttpE2eTest.toolError(alice, "open_workspace", Map.of("image", "tiny-archive"));
                assertTrue(refused.contains("is not granted image 'tiny-archive' (granted: [tiny])"), refused);

                Cli rm = berth(home, "image", "rm", "tiny");
                assertEquals(1, rm.exit(), rm.out());
                assertTrue(rm.out().contains("is in use by workspace " + ws.path("workspace").asString()), rm.out());
                HttpE2eTest.ok(alice, "close_workspace", Map.of("workspace", ws.path("workspace").asString(), "delete", true));
            }
            Cli rm = berth(home, "image", "rm", "tiny");
            assertEquals(0, rm.exit(), rm.out());
            Cli gc = berth(home, "image", "gc");
            assertEquals(0, gc.exit(), gc.out());
        } finally {
            HomeLeaks.assertNone(dir); // a leak is named here, before the delete
            dev.berth.engine.spi.Trees.delete(dir);
        }
    }

    @Test
    void buildFromARecipe_throughTheCli_streamsTheSteps_andAFailingStepKeepsNothing() throws Exception {
        assumeTrue(OciFixture.missingTools() == null, OciFixture::missingTools);
        Path dir = Files.createTempDirectory("berth-build-e2e-");
        // workspace sandboxes run as their own uid and must traverse the home's parents
        Files.setPosixFilePermissions(dir, java.nio.file.attribute.PosixFilePermissions.fromString("rwxr-xr-x"));
        Path home = Files.createDirectories(dir.resolve("home"));
        try (OciFixture oci = new OciFixture(Files.createDirectories(dir.resolve("oci")))) {
            Path layout = oci.busyboxLayout();
            assertEquals(0, berth(home, "image", "import", layout + ":" + OciFixture.TAG, "--name", "tiny").exit());
            Path recipe = Files.writeString(dir.resolve("recipe.json"), """
                    {"berth_recipe": 1, "base": "tiny",
                     "steps": [{"name": "greet", "run": "echo 'echo built by a recipe' > /bin/greet; busybox chmod 755 /bin/greet; greet"}],
                     "env": {"BUILT": "1"}}
                    """);
            Cli build = berth(home, "image", "build", recipe.toString(), "--name", "greeter");
            assertEquals(0, build.exit(), build.out());
            assertTrue(build.out().contains("[step 1/1 'greet'] built by a recipe"), build.out());
            assertTrue(build.out().contains("built greeter = sha256:"), build.out());
            Cli list = berth(home, "image", "list");
            assertTrue(list.out().contains("greeter ") && list.out().contains("recipe:" + recipe), list.out());

            Path broken = Files.writeString(dir.resolve("broken.json"), """
                    {"berth_recipe": 1, "base": "tiny", "steps": ["echo fine", {"name": "fails", "run": "exit 7"}]}
                    """);
            Cli fail = berth(home, "image", "build", broken.toString(), "--name", "broken");
            assertEquals(1, fail.exit(), fail.out());
            assertTrue(fail.out().contains("step 2/2 'fails' failed with exit code 7; nothing was kept"), fail.out());
            assertTrue(!berth(home, "image", "list").out().contains("broken"));
            Cli typo = berth(home, "image", "build", broken.toString());
            assertEquals(2, typo.exit(), typo.out());
        } finally {
            HomeLeaks.assertNone(dir); // a leak is named here, before the delete
            dev.berth.engine.spi.Trees.delete(dir);
        }
    }

    /**
     * Issue 12 item 4: without a developer image in the store the namespace level's root is the host's /usr, and
     * {@code berth doctor} says it is the fallback; with one (imported from an ext4 root the way {@code berth setup}
     * imports the microVM developer image), doctor names it with its digest and a workspace that names no image runs
     * on it, its result naming it.
     */
    @Test
    void namespaceRoot_isTheDeveloperImageOnceImported_andDoctorNamesItOrTheFallback() throws Exception {
        assumeTrue(OciFixture.missingTools() == null, OciFixture::missingTools);
        Path dir = Files.createTempDirectory("berth-devroot-e2e-");
        Files.setPosixFilePermissions(dir, java.nio.file.attribute.PosixFilePermissions.fromString("rwxr-xr-x"));
        Path home = Files.createDirectories(dir.resolve("home"));
        try (OciFixture oci = new OciFixture(Files.createDirectories(dir.resolve("oci")))) {
            Cli before = berth(home, "doctor");
            assertTrue(before.out().contains("namespace  built-in image host-usr+") && before.out().contains("FALLBACK, the host's /usr"),
                    before.out());
            // the developer image's form as berth setup hands it over: an ext4 root filesystem
            assertEquals(0, berth(home, "image", "import", oci.busyboxLayout() + ":" + OciFixture.TAG, "--name", "tiny").exit());
            var store = new dev.berth.engine.image.ImageStore(home);
            Path tree = store.rootImage("tiny", store.digestOf("tiny").orElseThrow()).rootTree();
            Path ext4 = dir.resolve("developer.ext4");
            Process mkfs = new ProcessBuilder("mkfs.ext4", "-q", "-F", "-E", "root_owner=0:0", "-d", tree.toString(), ext4.toString(), "64M")
                    .redirectErrorStream(true).start();
            assertEquals(0, mkfs.waitFor(), new String(mkfs.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
            var developer = store.importBaseDisk(ext4, dev.berth.engine.image.ImageStore.DEVELOPER, dev.berth.mcp.cli.SetupCommand.DEVELOPER_DEFAULTS,
                    "microvm-developer-image:test", dev.berth.engine.image.ImportLimits.DEFAULT, l -> { });
            Cli after = berth(home, "doctor");
            assertTrue(after.out().contains("namespace  built-in image developer " + developer.digest() + " (the developer image in the store)"),
                    after.out());
            try (McpBridge mcp = McpBridge.stdio(home, "--isolation", "namespace")) {
                mcp.connect();
                JsonNode ws = mcp.ok("open_workspace", Map.of());
                SchemaCheck.assertValid("open_workspace", ws);
                assertEquals("developer", ws.path("image").path("name").asString(), ws.toString());
                assertEquals(developer.digest(), ws.path("image").path("digest").asString(), ws.toString());
                JsonNode r = mcp.ok("run", Map.of("workspace", ws.path("workspace").asString(), "command", "cat /etc/os-release"));
                assertEquals("ID=" + OciFixture.MARKER, r.path("stdout").asString().strip(), r.toString());
            }
        } finally {
            HomeLeaks.assertNone(dir); // a leak is named here, before the delete
            dev.berth.engine.spi.Trees.delete(dir);
        }
    }
}
