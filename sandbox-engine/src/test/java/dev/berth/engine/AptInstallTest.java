package dev.berth.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.berth.engine.api.EngineConfig;
import dev.berth.engine.api.OpenRequest;
import dev.berth.engine.api.OutputListener;
import dev.berth.engine.api.RunRequest;
import dev.berth.engine.api.RunResult;
import dev.berth.engine.api.Tenant;
import dev.berth.engine.host.HostIdentity;
import dev.berth.engine.gvisor.GvisorDriver;
import dev.berth.engine.image.HostDebianRoot;
import dev.berth.engine.image.ImageStore;
import dev.berth.engine.image.ImportLimits;
import dev.berth.engine.namespace.NamespaceDriver;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@code apt-get install} as root in a namespace and a gVisor workspace on a Debian image (issue 32): a package set whose
 * maintainer script adds a system user with {@code adduser} and chowns its directory to it, and whose files belong to
 * another user in the package itself, from a local repository built here with Debian's own tools ({@code dpkg-deb},
 * {@code dpkg-scanpackages}) and seen inside as a {@code file:} repository (no network). The image is a
 * {@link HostDebianRoot} of the host's own apt, dpkg and adduser; the workspace's root is its own writable overlay of
 * it ({@code RootOverlay}), so what apt installs lands in the workspace's layer and the image stays as imported. One
 * image and one engine for both levels. (The microVM test image is busybox without apt; a microVM on this Debian
 * image boots for tens of seconds under TCG, beyond this class's budget: its root is the guest's own overlay.)
 */
class AptInstallTest {
    static boolean gvisor;
    static Path home;
    static Engine engine;

    @BeforeAll
    static void start() throws Exception {
        assumeTrue(HostIdentity.isRoot(), "the image root is made writable (an overlay) by a root server");
        assumeTrue(HostDebianRoot.missing() == null, HostDebianRoot::missing);
        for (String t : List.of("/usr/bin/dpkg-deb", "/usr/bin/dpkg-scanpackages")) {
            assumeTrue(Files.isExecutable(Path.of(t)), t + " is missing (scripts/install-deps.sh installs dpkg-dev)");
        }
        home = Files.createTempDirectory("berth-apt-");
        Files.setPosixFilePermissions(home, java.nio.file.attribute.PosixFilePermissions.fromString("rwxr-xr-x"));
        NamespaceDriver d = new NamespaceDriver(home);
        assumeTrue(d.probe().available(), () -> d.probe().reason());
        GvisorDriver g = new GvisorDriver(home);
        gvisor = g.probe().available();
        Path scratch = home.resolve("scratch");
        Path tree = scratch.resolve("root");
        HostDebianRoot.build(tree, List.of("apt", "adduser"), List.of());
        Files.createDirectories(tree.resolve("workspace"));
        repository(scratch.resolve("debs"), tree.resolve("srv/repo"));
        Files.writeString(tree.resolve("etc/apt/sources.list.d/local.list"), "deb [trusted=yes] file:/srv/repo ./\n");
        new ImageStore(home).importTree(tree, "debian", "amd64", Map.of("Env", List.of("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"),
                "WorkingDir", "/workspace"), "Debian packages of this host", null, ImportLimits.DEFAULT, l -> { });
        dev.berth.engine.spi.Trees.delete(scratch);
        engine = Engine.start(EngineConfig.defaults(home, gvisor ? List.of(d, g) : List.of(d)));
    }

    @AfterAll
    static void stop() throws Exception {
        if (engine != null) engine.close();
        if (home != null) dev.berth.engine.spi.Trees.delete(home);
    }

    /**
     * Two packages: {@code berth-demo-svc} (its postinst adds the system user {@code berthsvc} and gives it
     * {@code /var/lib/berth-demo-svc}; its data file belongs to uid 1234 in the package) and {@code berth-demo-tool},
     * which depends on it.
     */
    static void repository(Path build, Path repo) throws Exception {
        Files.createDirectories(repo);
        Path svc = build.resolve("svc");
        Files.createDirectories(svc.resolve("DEBIAN"));
        Files.createDirectories(svc.resolve("var/lib/berth-demo-svc"));
        Files.createDirectories(svc.resolve("usr/share/berth-demo-svc"));
        Files.writeString(svc.resolve("usr/share/berth-demo-svc/data"), "data\n");
        Files.writeString(svc.resolve("DEBIAN/control"), """
                Package: berth-demo-svc
                Version: 1.0
                Architecture: all
                Maintainer: Berth tests <tests@localhost>
                Depends: adduser
                Description: a service that runs as its own user
                """);
        Files.writeString(svc.resolve("DEBIAN/postinst"), """
                #!/bin/sh
                set -e
                if [ "$1" = configure ]; then
                    adduser --system --group --home /var/lib/berth-demo-svc --no-create-home berthsvc
                    chown berthsvc:berthsvc /var/lib/berth-demo-svc
                fi
                """);
        Path tool = build.resolve("tool");
        Files.createDirectories(tool.resolve("DEBIAN"));
        Files.createDirectories(tool.resolve("usr/bin"));
        Files.writeString(tool.resolve("usr/bin/berth-demo-tool"), "#!/bin/sh\necho tool ran as $(id -un)\n");
        Files.writeString(tool.resolve("DEBIAN/control"), """
                Package: berth-demo-tool
                Version: 1.0
                Architecture: all
                Maintainer: Berth tests <tests@localhost>
                Depends: berth-demo-svc
                Description: a tool that needs the service
                """);
        sh("chmod 0755 " + svc.resolve("DEBIAN/postinst") + " " + tool.resolve("usr/bin/berth-demo-tool")
                + " && chown 1234:1234 " + svc.resolve("usr/share/berth-demo-svc/data")
                + " && dpkg-deb -Zgzip -b " + svc + " " + repo.resolve("berth-demo-svc_1.0_all.deb") + " >/dev/null"
                + " && dpkg-deb -Zgzip -b --root-owner-group " + tool + " " + repo.resolve("berth-demo-tool_1.0_all.deb") + " >/dev/null"
                + " && cd " + repo + " && dpkg-scanpackages -m . /dev/null 2>/dev/null > Packages");
    }

    static void sh(String cmd) throws Exception {
        Process p = new ProcessBuilder("sh", "-c", cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        assertEquals(0, p.waitFor(), cmd + ": " + out);
    }

    String run(String ws, String cmd) throws Exception {
        RunResult r = engine.run(Tenant.LOCAL, new RunRequest(ws, cmd, null, null, 300, null, null), OutputListener.NONE);
        assertEquals(0, r.exitCode(), cmd + ": " + r);
        return r.stdout();
    }

    @Test
    void namespace_aptGetInstall_fromALocalRepository_runsMaintainerScriptsAndKeepsOwners() throws Exception {
        install("namespace");
    }

    @Test
    void gvisor_aptGetInstall_fromALocalRepository_runsMaintainerScriptsAndKeepsOwners() throws Exception {
        assumeTrue(gvisor, "gVisor cannot run here");
        install("gvisor");
    }

    void install(String level) throws Exception {
        // GNU stat fails on this runsc (EINVAL, GvisorDriver's known limits): find reads the owners on every level
        String ws = engine.open(Tenant.LOCAL, new OpenRequest(null, null, null, level, null, null, null, "debian")).workspace().id();
        String install = run(ws, "apt-get -q -o Acquire::Languages=none update >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -q -y berth-demo-tool 2>&1 | tail -25");
        assertEquals("tool ran as root\nberthsvc:berthsvc\n1234:1234\ninstall ok installed\n", run(ws, "berth-demo-tool"
                + " && find /var/lib/berth-demo-svc -maxdepth 0 -printf '%u:%g\\n' && find /usr/share/berth-demo-svc/data -printf '%U:%G\\n'"
                + " && dpkg-query -W -f '${Status}\\n' berth-demo-tool"), install);
        // the service's user, as a daemon dropping to it would (this minimal image has no PAM configuration for su)
        assertEquals("tool ran as berthsvc\n", run(ws, "setpriv --reuid=berthsvc --regid=berthsvc --init-groups berth-demo-tool"));
        // kept across park; the image itself unchanged: another workspace on it has none of it
        engine.park(Tenant.LOCAL, ws);
        assertEquals("berthsvc:berthsvc\n", run(ws, "test -x /usr/bin/berth-demo-tool && find /var/lib/berth-demo-svc -maxdepth 0 -printf '%u:%g\\n'"));
        String other = engine.open(Tenant.LOCAL, new OpenRequest(null, null, null, level, null, null, null, "debian")).workspace().id();
        assertEquals("absent\n", run(other, "test -e /usr/bin/berth-demo-tool || getent passwd berthsvc || echo absent"));
    }
}
