package dev.berth.mcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.sun.net.httpserver.HttpServer;
import com.sun.net.httpserver.SimpleFileServer;
import dev.berth.engine.EgressFixture;
import dev.berth.engine.Engine;
import dev.berth.engine.api.EngineConfig;
import dev.berth.engine.api.OpenRequest;
import dev.berth.engine.api.OutputListener;
import dev.berth.engine.RecipeBuild;
import dev.berth.engine.api.RunRequest;
import dev.berth.engine.api.RunResult;
import dev.berth.engine.api.Tenant;
import dev.berth.engine.image.HostDebianRoot;
import dev.berth.engine.image.ImageRecord;
import dev.berth.engine.image.ImportLimits;
import dev.berth.engine.image.Recipe;
import dev.berth.engine.namespace.NamespaceDriver;
import dev.berth.engine.spi.Resources;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Issue 12, "Real parts in tests": a recipe that installs a Debian package and an npm package through the egress
 * proxy, then runs them in a workspace. The Debian package is built by the test with {@code dpkg-deb} and served
 * from a flat apt repository ({@code dpkg-scanpackages}; Release signed with a gpg key of the test's own, which the
 * base image trusts through {@code signed-by}) by a real web server on 127.0.0.1 (the JDK's file server); the npm
 * package (with a {@code bin}) is served by Verdaccio on 127.0.0.1. The base image is a Debian root with apt, dpkg and
 * Node.js/npm assembled from the host's own installed packages ({@link HostDebianRoot}) and imported into the store.
 * The recipe's setup runs inside a namespace workspace whose only way out is the egress proxy, held to the recipe's
 * own allowlist ({@code apt.test} and {@code npm.test}, which the test's proxy resolves to loopback); then a workspace
 * on the built image runs both installed programs, on the namespace level and (where it runs here, TCG) as a microVM's
 * root; the built image's ext4, imported as the developer image the way {@code berth setup} does, is then the root of
 * a namespace workspace that names no image. The recipe's allowlist is {@code preset:debian} and {@code preset:npm}, which the test's operator settings
 * point at the loopback hosts (preset mirrors, as an operator points them at its own mirrors). Prints the build's
 * figures (benchmarks print, tests never assert times).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class RecipeDebianNpmE2eTest {
    private static final Resources SMALL = new Resources(1, 1024, 1024, 512);
    private Path dir;
    private Path gnupg;
    private HttpServer apt;
    private VerdaccioRegistry npm;
    private Engine engine;
    private ImageRecord base;
    private String microvm; // null: the microVM level runs here; else why not
    private long assembleMillis;
    private long baseMillis;

    @BeforeAll
    void start() throws Exception {
        assumeTrue(HostDebianRoot.missing() == null, HostDebianRoot::missing);
        for (String tool : List.of("/usr/bin/dpkg-deb", "/usr/bin/dpkg-scanpackages", "/usr/bin/gpg", "/usr/bin/node")) {
            assumeTrue(Files.isExecutable(Path.of(tool)), tool + " is needed (scripts/install-deps.sh)");
        }
        VerdaccioRegistry.requireInstalled();
        dir = Files.createTempDirectory("berth-recipe-deb-npm-");
        Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwxr-xr-x"));

        // a Debian package of the test's own, in a signed flat apt repository served on loopback
        Path pkg = Files.createDirectories(dir.resolve("deb/berth-hello/DEBIAN"));
        Files.writeString(pkg.resolve("control"), """
                Package: berth-hello
                Version: 1.0-1
                Architecture: all
                Maintainer: Berth tests <tests@berth.test>
                Description: prints a greeting (Berth recipe test package)
                """);
        Path bin = Files.createDirectories(dir.resolve("deb/berth-hello/usr/bin")).resolve("berth-hello");
        Files.writeString(bin, "#!/bin/sh\necho \"hello from the berth-hello Debian package\"\n");
        Files.setPosixFilePermissions(bin, PosixFilePermissions.fromString("rwxr-xr-x"));
        // a flat repository in a directory of the served tree ("deb URI debian/": apt asks for URI/debian/InRelease)
        Path repo = Files.createDirectories(dir.resolve("repo/debian"));
        sh(dir, "dpkg-deb", "--root-owner-group", "--build", "deb/berth-hello", "repo/debian/berth-hello_1.0-1_all.deb");
        Files.writeString(repo.resolve("Packages"), sh(repo.getParent(), "dpkg-scanpackages", "--multiversion", "debian"));
        byte[] packages = Files.readAllBytes(repo.resolve("Packages"));
        Files.writeString(repo.resolve("Release"), "Origin: berth-test\nLabel: berth-test\nSuite: debian/\nDate: "
                + DateTimeFormatter.RFC_1123_DATE_TIME.format(Instant.now().atOffset(ZoneOffset.UTC)) + "\nSHA256:\n "
                + HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(packages)) + " " + packages.length + " Packages\n");
        gnupg = Files.createDirectories(dir.resolve("gnupg"));
        Files.setPosixFilePermissions(gnupg, PosixFilePermissions.fromString("rwx------"));
        gpg("--batch", "--passphrase", "", "--quick-gen-key", "Berth test repository <apt@berth.test>", "ed25519", "sign", "never");
        gpg("--batch", "--yes", "--clearsign", "-o", repo.resolve("InRelease").toString(), repo.resolve("Release").toString());
        gpg("--batch", "--yes", "-o", dir.resolve("berth-test.gpg").toString(), "--export");
        apt = SimpleFileServer.createFileServer(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), repo.getParent(),
                SimpleFileServer.OutputLevel.NONE);
        apt.start();
        int aptPort = apt.getAddress().getPort();

        // an npm package with a command, on Verdaccio (plain HTTP) on loopback
        npm = VerdaccioRegistry.start(dir.resolve("verdaccio"), null, null, "npm.test", List.of(
                new VerdaccioRegistry.Version("berth-hello-npm", "2.0.0", Instant.parse("2024-01-02T03:04:05Z"),
                        Map.of("bin", Map.of("berth-hello-npm", "cli.js")),
                        Map.of("cli.js", "#!/usr/bin/env node\nconsole.log('hello from the berth-hello-npm package on node ' + process.version);\n"))));

        Path home = Files.createDirectories(dir.resolve("home"));
        NamespaceDriver d = new NamespaceDriver(home);
        assumeTrue(d.probe().available(), () -> d.probe().reason());
        // the microVM level too where it runs here (TCG): the built image then also boots as a microVM's root
        var vm = new dev.berth.engine.microvm.MicrovmDriver(dev.berth.engine.microvm.ImageBuilder.defaults(),
                dev.berth.engine.microvm.MicrovmDriver.ImageKind.TEST);
        var vmProbe = vm.probe();
        microvm = vmProbe.available() ? null : vmProbe.reason();
        List<dev.berth.engine.spi.IsolationDriver> drivers = microvm == null ? List.of(d, vm) : List.of(d);
        // the operator's ceiling allows both loopback hosts, and points the debian and npm presets at them (its
        // mirrors); the recipe's preset:debian and preset:npm narrow the build to them
        var proxy = EgressFixture.proxy(List.of("apt.test:" + aptPort, "npm.test:" + npm.port));
        engine = Engine.start(EngineConfig.defaults(home, drivers).withEgress(new dev.berth.engine.api.EgressSettings(proxy.proxy(),
                proxy.ceiling(), Map.of(), Map.of("debian", dev.berth.proxy.policy.Policy.of(List.of("apt.test:" + aptPort)),
                        "npm", dev.berth.proxy.policy.Policy.of(List.of("npm.test:" + npm.port))))));

        // the base: Debian with apt, dpkg and Node.js/npm from the host's packages, apt pointed at the test repository
        long t0 = System.nanoTime();
        Path tree = dir.resolve("base-root");
        HostDebianRoot.build(tree, List.of("apt", "dpkg", "nodejs", "bash", "coreutils"), List.of("/etc/ssl/certs", "/etc/ca-certificates.conf", "/usr/lib/node_modules/npm"));
        Files.createDirectories(tree.resolve("etc/apt/keyrings"));
        Files.copy(dir.resolve("berth-test.gpg"), tree.resolve("etc/apt/keyrings/berth-test.gpg"));
        Files.writeString(tree.resolve("etc/apt/sources.list.d/berth-test.list"),
                "deb [signed-by=/etc/apt/keyrings/berth-test.gpg] http://apt.test:" + aptPort + "/ debian/\n");
        assembleMillis = (System.nanoTime() - t0) / 1_000_000;
        t0 = System.nanoTime();
        base = engine.images().importTree(tree, "debian-node", "amd64",
                Map.of("Env", List.of("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")),
                "test:host-debian-packages", null, ImportLimits.DEFAULT, l -> { });
        baseMillis = (System.nanoTime() - t0) / 1_000_000;
        HomeLeaks.assertNone(tree); // a leak is named here, before the delete
        dev.berth.engine.spi.Trees.delete(tree);
    }

    @AfterAll
    void stop() throws Exception {
        if (engine != null) engine.close();
        if (npm != null) npm.close();
        if (apt != null) apt.stop(0);
        if (gnupg != null) {
            // the gpg-agent that key generation started, found by its home
            ProcessBuilder k = new ProcessBuilder("gpgconf", "--kill", "gpg-agent").redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD);
            k.environment().put("GNUPGHOME", gnupg.toString());
            k.start().waitFor(30, TimeUnit.SECONDS);
        }
        if (dir != null) HomeLeaks.assertNone(dir); // a leak is named here, before the delete
        if (dir != null) dev.berth.engine.spi.Trees.delete(dir);
    }

    @Test
    void recipe_installsADebianAndAnNpmPackageThroughTheProxy_andAWorkspaceOnTheImageRunsThem() throws Exception {
        Recipe recipe = Recipe.parse("""
                {"berth_recipe": 1, "base": "debian-node",
                 "packages": ["berth-hello"],
                 "allow": ["preset:debian", "preset:npm"],
                 "steps": [{"name": "npm package", "run": "npm install -g --registry http://npm.test:%d/ --no-audit --no-fund --loglevel=error berth-hello-npm"}],
                 "env": {"BUILT_BY": "recipe"}}
                """.formatted(npm.port), "inline");
        List<String> progress = new ArrayList<>();
        long t0 = System.nanoTime();
        ImageRecord built = new RecipeBuild(engine, Tenant.LOCAL, SMALL, 600).build(recipe, "debian-tools", "recipe:inline",
                ImportLimits.DEFAULT, line -> {
                    progress.add(line);
                    System.out.println(line);
                });
        long buildMillis = (System.nanoTime() - t0) / 1_000_000;
        String log = String.join("\n", progress);
        assertTrue(log.contains("[step 1/2 'packages']") && log.contains("Setting up berth-hello (1.0-1)"), log);
        assertTrue(log.contains("[step 2/2 'npm package']"), log);
        assertTrue(!log.contains("egress denied"), log);
        assertTrue(log.contains("egress [preset:debian, preset:npm]"), log);

        long customFirstExec = openToFirstExec("debian-tools");
        long builtInFirstExec = openToFirstExec("built-in");
        String ws = engine.open(Tenant.LOCAL, new OpenRequest(null, null, null, "namespace", SMALL, null, null, "debian-tools")).workspace().id();
        RunResult r = engine.run(Tenant.LOCAL, new RunRequest(ws, "berth-hello && berth-hello-npm && echo \"$BUILT_BY\""
                + " && dpkg-query -W -f '${Package} ${Version} ${db:Status-Status}\\n' berth-hello", null, Map.of(), 120, null, null),
                OutputListener.NONE);
        assertEquals(0, r.exitCode(), r.toString());
        List<String> out = r.stdout().strip().lines().toList();
        assertEquals("hello from the berth-hello Debian package", out.get(0), r.stdout());
        assertTrue(out.get(1).startsWith("hello from the berth-hello-npm package on node v"), r.stdout());
        assertEquals(List.of("recipe", "berth-hello 1.0-1 installed"), out.subList(2, 4), r.stdout());
        // the signed receipt names the image the run ran on, with its digest
        assertEquals("debian-tools@" + built.digest(), r.receipt().get("image"), r.receipt().toString());
        engine.closeWorkspace(Tenant.LOCAL, ws, true);
        // the programs came from the build: the base image has neither
        String plain = engine.open(Tenant.LOCAL, new OpenRequest(null, null, null, "namespace", SMALL, null, null, "debian-node")).workspace().id();
        RunResult onBase = engine.run(Tenant.LOCAL, new RunRequest(plain, "command -v berth-hello berth-hello-npm; echo done",
                null, Map.of(), 120, null, null), OutputListener.NONE);
        assertEquals("done", onBase.stdout().strip(), onBase.toString());
        engine.closeWorkspace(Tenant.LOCAL, plain, true);

        // the built image's ext4 as the namespace level's developer root, the way berth setup imports the microVM
        // developer image: a workspace that names no image then runs on it
        long t3 = System.nanoTime();
        var developer = engine.images().importBaseDisk(engine.images().rootImage("debian-tools", built.digest()).baseDisk(),
                dev.berth.engine.image.ImageStore.DEVELOPER, dev.berth.mcp.cli.SetupCommand.DEVELOPER_DEFAULTS, "test:debian-tools-ext4",
                ImportLimits.DEFAULT, l -> { });
        long developerImportMillis = (System.nanoTime() - t3) / 1_000_000;
        var onDefault = engine.open(Tenant.LOCAL, new OpenRequest(null, "ephemeral", null, "namespace", SMALL, null, null, null)).workspace();
        assertEquals("developer", onDefault.image().name(), onDefault.toString());
        assertEquals(developer.digest(), onDefault.image().digest());
        RunResult onDev = engine.run(Tenant.LOCAL, new RunRequest(onDefault.id(), "berth-hello && node --version && test ! -d /usr/lib/jvm && echo no-host-usr",
                null, Map.of(), 120, null, null), OutputListener.NONE);
        assertEquals(0, onDev.exitCode(), onDev.toString());
        List<String> devOut = onDev.stdout().strip().lines().toList();
        assertEquals("hello from the berth-hello Debian package", devOut.get(0), onDev.stdout());
        assertEquals("no-host-usr", devOut.get(2), onDev.stdout());
        engine.closeWorkspace(Tenant.LOCAL, onDefault.id(), true);

        // the same image as a microVM's root (its ext4 base under the guest's overlay), where that level runs here
        long vmFirstExec = -1;
        if (microvm == null) {
            long t2 = System.nanoTime();
            String vmWs = engine.open(Tenant.LOCAL, new OpenRequest(null, "ephemeral", null, "microvm", SMALL, null, null, "debian-tools"))
                    .workspace().id();
            RunResult inVm = engine.run(Tenant.LOCAL, new RunRequest(vmWs, "berth-hello && berth-hello-npm", null, Map.of(), 300, null, null),
                    OutputListener.NONE);
            vmFirstExec = (System.nanoTime() - t2) / 1_000_000;
            assertEquals(0, inVm.exitCode(), inVm.toString());
            List<String> vmOut = inVm.stdout().strip().lines().toList();
            assertEquals("hello from the berth-hello Debian package", vmOut.get(0), inVm.stdout());
            assertTrue(vmOut.get(1).startsWith("hello from the berth-hello-npm package on node v"), inVm.stdout());
            engine.closeWorkspace(Tenant.LOCAL, vmWs, true);
        } else {
            System.out.println("microVM level not run here: " + microvm);
        }

        System.out.printf("BENCH recipe (deb + npm, namespace): base root assembled from host packages %d ms, imported %d ms"
                        + " (%d MiB files, ext4 %d MiB); build %d ms (built image %d MiB files, ext4 %d MiB, layer %d MiB);"
                        + " open->first exec on the built image %d ms, on the built-in root %d ms; microVM open on the built image"
                        + " (first: boots its warm base) -> both programs run %d ms; its ext4 imported as the developer root"
                        + " (debugfs rdump, tree, ext4) %d ms%n",
                assembleMillis, baseMillis, base.treeBytes() >> 20, base.baseDiskBytes() >> 20, buildMillis, built.treeBytes() >> 20,
                built.baseDiskBytes() >> 20, built.layerBytes() >> 20, customFirstExec, builtInFirstExec, vmFirstExec, developerImportMillis);
    }

    /** Opens an ephemeral workspace on {@code image}, runs {@code true} in it and closes it: the time to the exec's end. */
    private long openToFirstExec(String image) throws Exception {
        long t0 = System.nanoTime();
        String ws = engine.open(Tenant.LOCAL, new OpenRequest(null, "ephemeral", null, "namespace", SMALL, null, null, image)).workspace().id();
        RunResult r = engine.run(Tenant.LOCAL, new RunRequest(ws, "true", null, Map.of(), 60, null, null), OutputListener.NONE);
        long ms = (System.nanoTime() - t0) / 1_000_000;
        assertEquals(0, r.exitCode(), r.toString());
        engine.closeWorkspace(Tenant.LOCAL, ws, true);
        return ms;
    }

    private String gpg(String... args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of("gpg", "--homedir", gnupg.toString()));
        cmd.addAll(List.of(args));
        return sh(dir, cmd.toArray(String[]::new));
    }

    private static String sh(Path cwd, String... cmd) throws IOException, InterruptedException {
        Path err = Files.createTempFile("berth-recipe-test-", ".err");
        try {
            Process p = new ProcessBuilder(cmd).directory(cwd.toFile()).redirectError(err.toFile()).start();
            p.getOutputStream().close();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(2, TimeUnit.MINUTES) || p.exitValue() != 0) {
                p.destroyForcibly();
                throw new IOException(String.join(" ", cmd) + " failed: " + out + Files.readString(err));
            }
            return out;
        } finally {
            Files.deleteIfExists(err);
        }
    }
}
