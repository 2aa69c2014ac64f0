package dev.berth.engine.namespace;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.berth.engine.AbstractImageWorkspaceTest;
import dev.berth.engine.api.OpenRequest;
import dev.berth.engine.api.RunResult;
import dev.berth.engine.api.Tenant;
import dev.berth.engine.spi.IsolationDriver;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/** The image cases on bubblewrap, plus its own: the image's root is read-only, not copy-on-write. */
class NamespaceImageWorkspaceTest extends AbstractImageWorkspaceTest {
    @Override
    protected IsolationDriver driver(Path home) { return new NamespaceDriver(home); }

    @Test
    void operatorsDefaultImage_isUsedWhenNoneIsNamed_andBuiltInStillOpens() throws Exception {
        engine.images().setDefault("tiny");
        try {
            var onDefault = engine.open(Tenant.LOCAL, new OpenRequest(null, null, null, null, SMALL, null, null, null)).workspace();
            assertEquals("tiny", onDefault.image().name());
            assertEquals("ID=" + dev.berth.engine.image.OciFixture.MARKER, run(onDefault.id(), "cat /etc/os-release").stdout().strip());
            var builtIn = engine.open(Tenant.LOCAL, new OpenRequest(null, null, null, null, SMALL, null, null, "built-in")).workspace();
            assertEquals("built-in", builtIn.image().name());
            // a tenant granted nothing still opens the operator's default
            Tenant none = new Tenant("nobody", Tenant.Quota.UNLIMITED, java.util.Set.of(), null, java.util.Set.of());
            var theirs = engine.open(none, new OpenRequest(null, null, null, null, SMALL, null, null, null)).workspace();
            assertEquals("tiny", theirs.image().name());
            for (var w : java.util.List.of(onDefault, builtIn)) engine.closeWorkspace(Tenant.LOCAL, w.id(), true);
            engine.closeWorkspace(none, theirs.id(), true);
        } finally {
            engine.images().setDefault(null);
        }
    }

    @Test
    void recipeBuild_runsItsStepsInAWorkspace_streamsProgress_keepsTheLog_andTheImageOpens() throws Exception {
        var recipe = dev.berth.engine.image.Recipe.parse("""
                {"berth_recipe": 1, "base": "tiny", "allow": [],
                 "steps": ["echo '#!/bin/sh' > /bin/hello; echo 'echo hello from the recipe' >> /bin/hello; busybox chmod 755 /bin/hello",
                           {"name": "config", "run": "echo built > /etc/built; echo state >> /var/lib/tiny/state; cat /etc/built"}],
                 "env": {"RECIPE": "yes"}, "workdir": "/srv/app"}
                """, "inline");
        java.util.List<String> progress = new java.util.concurrent.CopyOnWriteArrayList<>();
        var build = new dev.berth.engine.RecipeBuild(engine, Tenant.LOCAL, SMALL, 120);
        var built = build.build(recipe, "from-recipe", "recipe:inline", dev.berth.engine.image.ImportLimits.DEFAULT, progress::add);
        assertTrue(progress.contains("[step 2/2 'config'] built"), progress.toString());
        assertTrue(progress.stream().anyMatch(l -> l.startsWith("imported from-recipe = " + built.digest())), progress.toString());
        String log = java.nio.file.Files.readString(engine.images().buildLog(built.digest()).orElseThrow());
        assertTrue(log.contains("[step 1/2 'step 1'] echo '#!/bin/sh'") && log.contains("[step 2/2 'config'] built"), log);
        assertEquals("recipe:inline", built.origin());

        String ws = engine.open(Tenant.LOCAL, new OpenRequest(null, null, null, "namespace", SMALL, null, null, "from-recipe")).workspace().id();
        RunResult r = run(ws, "hello; cat /etc/built /var/lib/tiny/state; echo \"$RECIPE $GREETING\"; pwd; cat /etc/os-release");
        assertEquals(0, r.exitCode(), r.stderr());
        assertEquals(java.util.List.of("hello from the recipe", "built", "seeded", "state", "yes hello from the config", "/srv/app",
                "ID=" + dev.berth.engine.image.OciFixture.MARKER), r.stdout().strip().lines().toList());
        engine.closeWorkspace(Tenant.LOCAL, ws, true);
        // the base image is as it was: the build ran on a copy
        String base = engine.open(Tenant.LOCAL, new OpenRequest(null, null, null, "namespace", SMALL, null, null, "tiny")).workspace().id();
        assertEquals("absent", run(base, "test -e /bin/hello && echo present || echo absent").stdout().strip());
        engine.closeWorkspace(Tenant.LOCAL, base, true);
        engine.images().remove("from-recipe", java.util.Map.of());
    }

    @Test
    void recipeBuild_aFailingStep_stopsTheBuild_namesTheStep_andKeepsNothing() throws Exception {
        var recipe = dev.berth.engine.image.Recipe.parse("""
                {"berth_recipe": 1, "base": "tiny",
                 "steps": ["echo one > /etc/one", {"name": "breaks", "run": "echo oops >&2; exit 3"}, "echo never > /etc/never"]}
                """, "inline");
        var workspacesBefore = engine.list(Tenant.LOCAL).stream().map(w -> w.id()).toList();
        java.util.List<String> progress = new java.util.concurrent.CopyOnWriteArrayList<>();
        var e = org.junit.jupiter.api.Assertions.assertThrows(dev.berth.engine.image.ImageException.class,
                () -> new dev.berth.engine.RecipeBuild(engine, Tenant.LOCAL, SMALL, 120).build(recipe, "half", "recipe:inline",
                        dev.berth.engine.image.ImportLimits.DEFAULT, progress::add));
        assertTrue(e.getMessage().contains("step 2/3 'breaks' failed with exit code 3; nothing was kept") && e.getMessage().contains("oops"),
                e.getMessage());
        assertTrue(progress.stream().noneMatch(l -> l.contains("step 3/3")), progress.toString());
        assertTrue(engine.images().digestOf("half").isEmpty());
        try (var left = java.nio.file.Files.list(engine.images().dir())) {
            assertEquals(java.util.List.of(), left.map(p -> p.getFileName().toString()).filter(f -> f.startsWith(".build-")).toList());
        }
        assertEquals(workspacesBefore, engine.list(Tenant.LOCAL).stream().map(w -> w.id()).toList(), "the build's workspace is gone");
    }

    @Test
    void developerImageInTheStore_isTheLevelsRoot_elseTheHostUsrFallbackSaysSo() throws Exception {
        // no developer image: the host's /usr, and the result says so (built-in, host-usr+...)
        var onHost = engine.open(Tenant.LOCAL, new OpenRequest(null, null, null, null, SMALL, null, null, null)).workspace();
        assertEquals("built-in", onHost.image().name());
        assertTrue(onHost.image().digest().startsWith("host-usr+"), onHost.image().toString());
        assertEquals("host", run(onHost.id(), "test -d /usr/lib/jvm && echo host").stdout().strip());
        engine.closeWorkspace(Tenant.LOCAL, onHost.id(), true);

        // an ext4 root filesystem (what berth setup hands over: the microVM developer image's base.ext4), made from a
        // tree of the test's own, imported under the developer name; a second import of the same origin reads nothing
        Path tree = home.resolve("dev-root");
        dev.berth.engine.host.Layout.copyTree(engine.images().rootImage("tiny", image.digest()).rootTree(), tree);
        java.nio.file.Files.writeString(tree.resolve("etc/os-release"), "ID=berth-developer-test\n");
        Path ext4 = home.resolve("developer.ext4");
        dev.berth.engine.host.HostCommand.exec("mkfs.ext4", "-q", "-F", "-E", "root_owner=0:0", "-d", tree.toString(), ext4.toString(), "64M");
        var store = engine.images();
        var imported = store.importBaseDisk(ext4, dev.berth.engine.image.ImageStore.DEVELOPER,
                java.util.Map.of("Env", java.util.List.of("PATH=/bin")), "test:developer-1", dev.berth.engine.image.ImportLimits.DEFAULT, l -> { });
        java.util.List<String> again = new java.util.ArrayList<>();
        assertEquals(imported.digest(), store.importBaseDisk(ext4, "developer", java.util.Map.of(), "test:developer-1",
                dev.berth.engine.image.ImportLimits.DEFAULT, again::add).digest());
        assertEquals(java.util.List.of("image developer = " + imported.digest() + " is test:developer-1 already"), again);
        try {
            var ws = engine.open(Tenant.LOCAL, new OpenRequest(null, null, null, null, SMALL, null, null, null)).workspace();
            assertEquals(new dev.berth.engine.api.ImageRef("developer", imported.digest()), ws.image());
            RunResult r = run(ws.id(), "cat /etc/os-release; test -d /usr/lib/jvm && echo host-visible; echo end");
            assertEquals("ID=berth-developer-test\nend", r.stdout().strip(), r.toString());
            assertEquals("developer@" + imported.digest(), r.receipt().get("image"), r.receipt().toString());
            // asking for the level's own image is asking for the developer image; a tenant granted nothing opens it too
            var explicit = engine.open(Tenant.LOCAL, new OpenRequest(null, null, null, null, SMALL, null, null, "built-in")).workspace();
            assertEquals("developer", explicit.image().name());
            Tenant none = new Tenant("nobody", Tenant.Quota.UNLIMITED, java.util.Set.of(), null, java.util.Set.of());
            var theirs = engine.open(none, new OpenRequest(null, null, null, null, SMALL, null, null, null)).workspace();
            assertEquals("developer", theirs.image().name());
            for (var w : java.util.List.of(ws, explicit)) engine.closeWorkspace(Tenant.LOCAL, w.id(), true);
            engine.closeWorkspace(none, theirs.id(), true);
        } finally {
            engine.removeImage("developer");
        }
    }

    @Test
    void imageRoot_isTheWorkspacesOwnWritableCopy() throws Exception {
        org.junit.jupiter.api.Assumptions.assumeTrue(dev.berth.engine.host.HostIdentity.isRoot(), "the overlay is mounted by a root server");
        String ws = engine.open(Tenant.LOCAL, new OpenRequest(null, null, null, null, SMALL, null, null, "tiny")).workspace().id();
        assertEquals(0, run(ws, "echo x > /bin/planted").exitCode(), "the image's root is the workspace's own (RootOverlay)");
        // /etc is the workspace's own copy (WritableRoot), writable as on a normal machine
        assertEquals(0, run(ws, "echo x > /etc/os-release && echo x > /usr/local/x && echo x > /root/x").exitCode());
        engine.closeWorkspace(Tenant.LOCAL, ws, true);
    }
}
