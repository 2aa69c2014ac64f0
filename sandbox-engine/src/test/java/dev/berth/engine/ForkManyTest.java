package dev.berth.engine;

import dev.berth.engine.api.EngineConfig;
import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.OpenRequest;
import dev.berth.engine.api.OpenResult;
import dev.berth.engine.api.OutputListener;
import dev.berth.engine.api.RunRequest;
import dev.berth.engine.api.RunResult;
import dev.berth.engine.api.TemplateSettings;
import dev.berth.engine.api.Tenant;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.berth.engine.api.EngineException.Kind;
import dev.berth.engine.namespace.NamespaceDriver;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Fork many ({@link Engine#openMany}) on real namespace sandboxes: independence, all-or-nothing, and bad input. */
class ForkManyTest {
    static final Tenant A = new Tenant("alice", Tenant.Quota.UNLIMITED);
    static final Tenant B = new Tenant("bob", Tenant.Quota.UNLIMITED);
    Path home;
    Engine engine;

    @BeforeEach
    void start() throws Exception {
        home = Files.createTempDirectory("berth-forkmany-");
        engine = Engine.start(EngineConfig.defaults(home, List.of(new NamespaceDriver(home))));
    }

    @AfterEach
    void stop() throws Exception {
        engine.close();
        dev.berth.engine.spi.Trees.delete(home);
    }

    String sh(Tenant t, String ws, String cmd) throws EngineException {
        RunResult r = engine.run(t, RunRequest.of(ws, cmd), OutputListener.NONE);
        assertEquals(0, r.exitCode(), cmd + ": " + r.stderr());
        return r.stdout();
    }

    String template() throws EngineException {
        engine.open(A, OpenRequest.persistent("proj"));
        sh(A, "proj", "mkdir -p repo && echo prepared > repo/state.txt");
        return engine.snapshot(A, "proj", "tpl").id();
    }

    static OpenRequest fork(String snapshot) {
        return new OpenRequest(null, "ephemeral", snapshot, null, null);
    }

    @Test
    void openMany_fromSnapshot_startsIndependentForksEachWithOwnIdentity() throws Exception {
        String snap = template();
        List<OpenResult> forks = engine.openMany(A, fork("tpl"), 4);

        assertEquals(4, forks.size());
        Set<String> ids = new HashSet<>();
        Set<String> uidMaps = new HashSet<>();
        for (OpenResult f : forks) {
            String id = f.workspace().id();
            assertTrue(f.created());
            assertEquals(snap, f.workspace().fromSnapshot());
            assertTrue(ids.add(id), "ids are distinct: " + id);
            assertEquals("prepared\n", sh(A, id, "cat repo/state.txt"));
            sh(A, id, "echo " + id + " > repo/mine.txt");
            if (dev.berth.engine.host.HostIdentity.isRoot()) {
                // the files the fork writes belong, on the host, to the fork's own uid
                Path layer = engine.home().resolve("run").resolve(id).resolve("disk").resolve("workspace").resolve("repo").resolve("mine.txt");
                uidMaps.add(String.valueOf(Files.getAttribute(layer, "unix:uid")));
            }
        }
        // each fork sees only its own change
        for (OpenResult f : forks) {
            String id = f.workspace().id();
            assertEquals(id + "\n", sh(A, id, "cat repo/mine.txt"));
        }
        // its own host identity: each sandbox writes as another host uid (when Berth is root)
        if (dev.berth.engine.host.HostIdentity.isRoot()) assertEquals(4, uidMaps.size(), "host owners " + uidMaps);
        // the template is unchanged
        assertEquals("", sh(A, "proj", "ls repo/mine.txt 2>/dev/null; true"));
        assertEquals(5, engine.list(A).size());
    }

    @Test
    void forkOfAFork_mapsTheImageOwnerOntoEachForksUid_insteadOfChowningIt() throws Exception {
        org.junit.jupiter.api.Assumptions.assumeTrue(dev.berth.engine.host.HostIdentity.isRoot(), "disk images need root");
        template();
        String owner = Files.readString(home.resolve("snapshots").resolve(engine.snapshots(A).getFirst().id())
                .resolve("state").resolve(dev.berth.engine.host.Layout.OWNER_FILE)).strip();
        String first = engine.open(A, new OpenRequest("first", "persistent", "tpl", null, null)).workspace().id();
        sh(A, first, "echo first >> repo/state.txt && echo new > repo/first.txt");
        engine.snapshot(A, first, "of-first");
        String second = engine.openMany(A, fork("of-first"), 1).getFirst().workspace().id();
        assertEquals("prepared\nfirst\nsecond\n", sh(A, second, "echo second >> repo/state.txt && cat repo/state.txt"));
        for (String id : List.of(first, second)) {
            // the image keeps its first owner on disk; the fork sees (and writes) every file as its own uid
            assertEquals(owner, Files.readString(home.resolve("workspaces").resolve(id).resolve("state")
                    .resolve(dev.berth.engine.host.Layout.OWNER_FILE)).strip());
            Path repo = home.resolve("run").resolve(id).resolve("disk").resolve("workspace").resolve("repo");
            int own = (int) dev.berth.engine.host.IdRanges.recorded(home.resolve("workspaces").resolve(id).resolve("state"));
            try (var files = Files.list(repo)) {
                for (Path f : files.toList()) assertEquals(own, Files.getAttribute(f, "unix:uid"), f + " of " + id);
            }
            assertTrue(Files.getAttribute(repo, "unix:uid").equals(own));
        }
        assertTrue(!owner.equals(String.valueOf(dev.berth.engine.host.IdRanges.recorded(home.resolve("workspaces").resolve(second).resolve("state")))));
    }

    @Test
    void count_outOfRange_refusedWithTheLimit_nothingOpened() throws Exception {
        template();
        for (int count : new int[] {0, -1, 17}) {
            var e = assertThrows(EngineException.class, () -> engine.openMany(A, fork("tpl"), count));
            assertEquals(Kind.INVALID_ARGUMENT, e.kind());
            assertTrue(e.getMessage().contains("count must be between 1 and 16 (the operator's limit of workspaces per call), got " + count),
                    e.getMessage());
        }
        engine.close();
        engine = Engine.start(EngineConfig.defaults(home, List.of(new NamespaceDriver(home))).withTemplates(new TemplateSettings(2)));
        var lower = assertThrows(EngineException.class, () -> engine.openMany(A, fork("tpl"), 3));
        assertTrue(lower.getMessage().contains("between 1 and 2"), lower.getMessage());
        assertEquals(1, engine.list(A).size(), "only the template's workspace");
    }

    @Test
    void badInput_otherTenantsSnapshot_otherIsolation_name_noSnapshot_refusedBeforeAnythingStarts() throws Exception {
        template();
        var other = assertThrows(EngineException.class, () -> engine.openMany(B, fork("tpl"), 2));
        assertEquals(Kind.NOT_FOUND, other.kind(), other.getMessage());
        assertTrue(engine.list(B).isEmpty());

        var level = assertThrows(EngineException.class,
                () -> engine.openMany(A, new OpenRequest(null, null, "tpl", "microvm", null), 2));
        assertEquals(Kind.CONFLICT, level.kind());
        assertTrue(level.getMessage().contains("was taken with isolation 'namespace'"), level.getMessage());

        var named = assertThrows(EngineException.class,
                () -> engine.openMany(A, new OpenRequest("x", null, "tpl", null, null), 2));
        assertEquals(Kind.INVALID_ARGUMENT, named.kind());
        assertTrue(named.getMessage().contains("cannot be given to 2 workspaces"), named.getMessage());

        var none = assertThrows(EngineException.class, () -> engine.openMany(A, OpenRequest.ephemeral(), 2));
        assertTrue(none.getMessage().contains("give from_snapshot"), none.getMessage());
        assertEquals(1, engine.list(A).size());
    }

    @Test
    void quotaForAllForks_checkedUpFront_nothingStarted() throws Exception {
        Tenant small = new Tenant("carol", new Tenant.Quota(3, 64, 1 << 20, 1L << 40));
        engine.open(small, OpenRequest.persistent("p"));
        engine.snapshot(small, "p", "s");
        var e = assertThrows(EngineException.class, () -> engine.openMany(small, fork("s"), 3));
        assertEquals(Kind.LIMIT, e.kind());
        assertTrue(e.getMessage().contains("workspaces: 1 open + 3 asked, limit 3"), e.getMessage());
        assertEquals(1, engine.list(small).size());
        assertEquals(2, engine.openMany(small, fork("s"), 2).size());
    }

    @Test
    void deleteSnapshot_whileForking_eitherRefusedOrForksFailCleanly() throws Exception {
        template();
        sh(A, "proj", "true");
        engine.closeWorkspace(A, "proj", true); // nothing else builds on the snapshot: delete may win the race
        CompletableFuture<Object> forking = CompletableFuture.supplyAsync(() -> {
            try {
                return engine.openMany(A, fork("tpl"), 4);
            } catch (EngineException e) {
                return e;
            }
        });
        boolean deleted = false;
        while (!forking.isDone() && !deleted) {
            try {
                engine.deleteSnapshot(A, "tpl");
                deleted = true;
            } catch (EngineException e) {
                assertEquals(Kind.CONFLICT, e.kind(), e.getMessage());
                assertTrue(e.getMessage().contains("still build"), e.getMessage());
            }
        }
        Object outcome = forking.get();
        if (outcome instanceof EngineException failed) {
            // the snapshot went first: nothing half-made is left behind
            assertTrue(deleted, "the forks failed only because the snapshot was deleted: " + failed.getMessage());
            assertTrue(engine.list(A).isEmpty(), "no fork was kept: " + engine.list(A));
        } else {
            @SuppressWarnings("unchecked") List<OpenResult> forks = (List<OpenResult>) outcome;
            assertEquals(4, forks.size());
            // every fork is whole, whether the delete came before (refused) or after the forks were done
            for (OpenResult f : forks) assertEquals("prepared\n", sh(A, f.workspace().id(), "cat repo/state.txt"));
            assertTrue(!deleted, "a snapshot that open forks build on cannot be deleted");
        }
        try (var dirs = Files.list(home.resolve("workspaces"))) {
            assertEquals(engine.list(A).size(), dirs.filter(p -> !p.getFileName().toString().startsWith(".")).count(),
                    "no workspace directory without a workspace");
        }
    }
}
