package dev.berth.engine.namespace;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.berth.engine.Engine;
import dev.berth.engine.api.EngineConfig;
import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.OpenRequest;
import dev.berth.engine.api.OutputListener;
import dev.berth.engine.api.RunRequest;
import dev.berth.engine.api.RunResult;
import dev.berth.engine.api.Tenant;
import dev.berth.engine.host.HostIdentity;
import dev.berth.engine.host.IdRanges;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Root inside a namespace workspace on real bubblewrap (issue 32): its ids are a range of host ids of its own, so it
 * gives files to other users inside, and those owners survive park, resume, snapshot and fork, while the host sees
 * every such file owned by an id of the workspace's own range, never by a host user.
 */
class NamespaceRootTest {
    Path home;
    Engine engine;

    @BeforeEach
    void start() throws Exception {
        assumeTrue(HostIdentity.isRoot(), "id ranges are mapped only when Berth is root");
        home = Files.createTempDirectory("berth-nsroot-");
        Files.setPosixFilePermissions(home, java.nio.file.attribute.PosixFilePermissions.fromString("rwxr-xr-x"));
        NamespaceDriver d = new NamespaceDriver(home);
        assumeTrue(d.probe().available(), () -> d.probe().reason());
        engine = Engine.start(EngineConfig.defaults(home, List.of(d)));
    }

    @AfterEach
    void stop() throws Exception {
        if (engine != null) engine.close();
        if (home != null) dev.berth.engine.spi.Trees.delete(home);
    }

    String sh(String ws, String cmd) throws EngineException {
        RunResult r = engine.run(Tenant.LOCAL, RunRequest.of(ws, cmd), OutputListener.NONE);
        assertEquals(0, r.exitCode(), cmd + ": " + r);
        return r.stdout();
    }

    /** The first host id of the workspace named {@code ws}. */
    long first(String ws) throws Exception {
        return IdRanges.recorded(home.resolve("workspaces").resolve(id(ws)).resolve("state"));
    }

    String id(String name) throws Exception {
        return engine.list(Tenant.LOCAL).stream().filter(w -> name.equals(w.name())).findFirst().orElseThrow().id();
    }

    /** The host owner of a file in a running workspace's /workspace (its layer is mounted under the runtime directory). */
    int hostUid(String ws, String file) throws Exception {
        return (int) Files.getAttribute(home.resolve("run").resolve(id(ws)).resolve("disk").resolve("workspace").resolve(file), "unix:uid",
                java.nio.file.LinkOption.NOFOLLOW_LINKS);
    }

    /** A file of the one imported image's root tree (under the store's content directory, {@code rootfs/}). */
    Path imageFile(String rel) throws java.io.IOException {
        try (var w = Files.walk(home.resolve("images/oci/store"), 4)) {
            return w.filter(p -> p.getFileName().toString().equals("rootfs")).findFirst().orElseThrow().resolve(rel);
        }
    }

    @Test
    void ownersOtherThanRoot_surviveParkResumeAndFork_onTheWorkspacesOwnHostIds() throws Exception {
        engine.open(Tenant.LOCAL, OpenRequest.persistent("a"));
        String made = "mkdir -p app && touch app/data root.txt && chown -R 1000:1001 app && chown 65535:65535 root.txt"
                + " && stat -c '%n %u:%g' app/data root.txt";
        assertEquals("app/data 1000:1001\nroot.txt 65535:65535\n", sh("a", made));
        long base = first("a");
        IdRanges range = NamespaceSettings.defaults().idRange();
        assertTrue(base >= range.start() && base + range.perWorkspace() <= range.start() + range.length(), "slot " + base);
        // the host sees the workspace's own ids, never a host user's
        assertEquals(base + 1000, hostUid("a", "app/data"));
        assertEquals(base + 65535, hostUid("a", "root.txt"));
        assertEquals(base, hostUid("a", "."));

        engine.park(Tenant.LOCAL, "a");
        assertEquals("app/data 1000:1001\nroot.txt 65535:65535\n", sh("a", "stat -c '%n %u:%g' app/data root.txt"), "after park and resume");
        assertEquals(base, first("a"), "a workspace keeps its ids across park");

        engine.snapshot(Tenant.LOCAL, "a", "snap");
        engine.open(Tenant.LOCAL, new OpenRequest("b", "persistent", "snap", null, null));
        long forkBase = first("b");
        assertTrue(Math.abs(forkBase - base) >= range.perWorkspace(), "the fork's ids overlap its origin's: " + base + ", " + forkBase);
        assertEquals("app/data 1000:1001\nroot.txt 65535:65535\n", sh("b", "stat -c '%n %u:%g' app/data root.txt"), "in the fork");
        assertEquals(forkBase + 1000, hostUid("b", "app/data"), "the fork's files show as its own ids on the host");
        // the user inside the fork owns its file and nothing of root's
        assertEquals("1000\nwrote\nrefused\n", sh("b", "setpriv --reuid=1000 --regid=1001 --clear-groups sh -c"
                + " 'id -u; echo x > app/data && echo wrote; echo x > root.txt 2>/dev/null || echo refused'"));
    }

    /** An imported image's read-only root is bound through an idmapped mount: its files keep their owners inside. */
    @Test
    void importedImage_filesKeepTheirOwnersInside() throws Exception {
        assumeTrue(dev.berth.engine.image.OciFixture.missingTools() == null, dev.berth.engine.image.OciFixture::missingTools);
        try (var oci = new dev.berth.engine.image.OciFixture(home.resolve("oci"))) {
            engine.images().importFrom(oci.busyboxLayout() + ":v1", "tiny", dev.berth.engine.image.ImportLimits.DEFAULT, l -> { });
        }
        String ws = engine.open(Tenant.LOCAL, new OpenRequest(null, null, null, null, null, null, null, "tiny")).workspace().id();
        // root's files are root's (unmapped they would show as the overflow id 65534)
        assertEquals("/etc/os-release\n", sh(ws, "find /etc/os-release -user 0 -group 0"));
        // the image's root is the workspace's own, writable copy (an overlay, its changes in the layer): written
        // inside, kept across park, the shared image unchanged
        String before = Files.readString(imageFile("etc/os-release"));
        assertEquals("x\nnew\n", sh(ws, "echo x > /etc/os-release && echo new > /bin/berth-new && chown 1000:1000 /bin/berth-new"
                + " && cat /etc/os-release /bin/berth-new"));
        engine.park(Tenant.LOCAL, ws);
        assertEquals("new 1000:1000\n", sh(ws, "cat /bin/berth-new | tr -d '\\n'; echo \" $(stat -c %u:%g /bin/berth-new)\""), "after park");
        assertEquals(before, Files.readString(imageFile("etc/os-release")), "the image's own file was written");
        assertTrue(!Files.exists(imageFile("bin/berth-new")), "the image was written");
        String other = engine.open(Tenant.LOCAL, new OpenRequest(null, null, null, null, null, null, null, "tiny")).workspace().id();
        assertEquals("absent\n", sh(other, "test -e /bin/berth-new || echo absent"));
    }

    /**
     * useradd, then su to that user and back as root's runs do (issue 32): /etc and /home are the workspace's own and
     * writable, kept across park and carried by a fork; the built-in /etc shared by every workspace is never written.
     */
    @Test
    void useradd_thenSu_keptAcrossParkAndFork() throws Exception {
        engine.open(Tenant.LOCAL, OpenRequest.persistent("u"));
        assertEquals("uid=1000(bob) gid=1000(bob) groups=1000(bob)\nbob /home/bob\n", sh("u",
                "useradd -m -s /bin/sh bob && su bob -c 'id; echo $(whoami) $HOME; touch ~/mine' && stat -c %U /home/bob/mine >/dev/null"));
        assertEquals("bob:bob\n", sh("u", "stat -c %U:%G /home/bob/mine"));
        assertTrue(sh("u", "grep -c '^bob:' /etc/shadow").startsWith("1"));
        assertEquals("uid=0(root)\n", sh("u", "runuser -u bob -- id -u >/dev/null && id | cut -d' ' -f1"));
        // going back up is refused on this level (no_new_privs, nosuid, host root unmapped: sandbox-engine/DESIGN.md)
        RunResult up = engine.run(Tenant.LOCAL, RunRequest.of("u", "su bob -c 'su root -c id -u </dev/null'"), OutputListener.NONE);
        assertTrue(up.exitCode() != 0 && !up.stdout().contains("0"), up.toString());
        assertTrue(!Files.readString(dev.berth.engine.host.BaseEtc.prepare(home.resolve("images")).resolve("passwd")).contains("bob"),
                "the shared built-in /etc was written");
        engine.park(Tenant.LOCAL, "u");
        assertEquals("uid=1000(bob)\n", sh("u", "su bob -c id | cut -d' ' -f1"), "after park and resume");
        engine.snapshot(Tenant.LOCAL, "u", "us");
        engine.open(Tenant.LOCAL, new OpenRequest("v", "persistent", "us", null, null));
        assertEquals("bob bob:bob\n", sh("v", "su bob -c 'whoami' | tr -d '\\n'; echo \" $(stat -c %U:%G /home/bob/mine)\""), "in the fork");
        // another workspace never sees the user
        engine.open(Tenant.LOCAL, OpenRequest.persistent("w"));
        RunResult other = engine.run(Tenant.LOCAL, RunRequest.of("w", "id bob"), OutputListener.NONE);
        assertTrue(other.exitCode() != 0, other.toString());
    }

    /**
     * PostgreSQL as on a normal machine (issue 32): root adds its user and gives it the data directory, the server is
     * initialised and started by root dropping to that user (PostgreSQL refuses to run as root), and a client queries
     * it over localhost. The host's Debian PostgreSQL (its /usr is this workspace's).
     */
    @Test
    void postgresql_initialisedStartedAsItsUser_queriedOverLocalhost() throws Exception {
        Path bin = null;
        if (Files.isDirectory(Path.of("/usr/lib/postgresql"))) {
            try (var s = Files.list(Path.of("/usr/lib/postgresql"))) {
                bin = s.map(v -> v.resolve("bin")).filter(b -> Files.isExecutable(b.resolve("initdb"))).findFirst().orElse(null);
            }
        }
        assumeTrue(bin != null && Files.isExecutable(Path.of("/usr/bin/psql")),
                "PostgreSQL is not installed on this host (scripts/install-deps.sh installs the Debian package postgresql)");
        engine.open(Tenant.LOCAL, OpenRequest.persistent("pg"));
        String out = sh("pg", "useradd -r -m -d /var/lib/pg -s /bin/sh postgres && mkdir -p /var/run/postgresql"
                + " && chown postgres:postgres /var/run/postgresql"
                + " && su postgres -c '" + bin + "/initdb -D /var/lib/pg/data -A trust -U postgres >/var/lib/pg/initdb.log'"
                + " && su postgres -c '" + bin + "/pg_ctl -D /var/lib/pg/data -l /var/lib/pg/log -o \"-c listen_addresses=localhost\" -w start >/dev/null'"
                + " && psql -h localhost -U postgres -Atc 'select current_user, 6*7'"
                + " && stat -c %U /var/lib/pg/data/PG_VERSION && ps -o user= -p $(head -1 /var/lib/pg/data/postmaster.pid)"
                + " && su postgres -c '" + bin + "/pg_ctl -D /var/lib/pg/data -w stop >/dev/null'");
        assertEquals("postgres|42\npostgres\npostgres\n", out);
    }

    /**
     * npm install as root of a small tree of local tarballs whose entries belong to other users (as published
     * packages' do): npm keeps or sets their owners without a single TAR_ENTRY_ERROR (issue 32: 545 of them before),
     * no registry involved.
     */
    @Test
    void npmInstall_ofTarballsWithOtherOwners_hasNoTarEntryErrors() throws Exception {
        assumeTrue(Files.isExecutable(Path.of("/usr/bin/npm")), "npm is not installed on this host");
        engine.open(Tenant.LOCAL, OpenRequest.persistent("n"));
        String pack = "mkdir -p src/%1$s/package/lib && cd src/%1$s/package"
                + " && printf '{\"name\":\"%1$s\",\"version\":\"1.0.0\",\"main\":\"lib/index.js\"%2$s}' > package.json"
                + " && echo 'module.exports = \"%1$s\" + (%3$s);' > lib/index.js && cd .."
                + " && tar --owner=1234 --group=5678 --mode=go-w -czf ../../%1$s-1.0.0.tgz package && cd ../..";
        String out = sh("n", String.format(pack, "berth-leaf", "", "\"\"") + " && "
                + String.format(pack, "berth-root", ",\"dependencies\":{\"berth-leaf\":\"file:../berth-leaf-1.0.0.tgz\"}",
                        "require(\"berth-leaf\")")
                + " && mkdir app && cd app && echo '{\"name\":\"app\",\"version\":\"1.0.0\"}' > package.json"
                + " && npm install --offline --no-audit --no-fund --loglevel=warn ../berth-leaf-1.0.0.tgz ../berth-root-1.0.0.tgz 2>&1"
                + " && node -e 'console.log(require(\"berth-root\"))'");
        assertTrue(!out.contains("TAR_ENTRY_ERROR"), out);
        assertTrue(out.strip().endsWith("berth-rootberth-leaf"), out);
    }

    @Test
    void idsOutsideTheRange_unmapped_chownRefused() throws Exception {
        engine.open(Tenant.LOCAL, OpenRequest.persistent("c"));
        RunResult r = engine.run(Tenant.LOCAL, RunRequest.of("c", "touch f && chown 65536 f"), OutputListener.NONE);
        assertTrue(r.exitCode() != 0 && r.stderr().contains("Invalid argument"), r.toString());
        // host ids of the workspace's own range only: no id of another workspace, nor a host user's, is reachable
        assertEquals("0 " + first("c") + " 65536", sh("c", "cat /proc/self/uid_map").strip().replaceAll("\\s+", " "));
    }
}
