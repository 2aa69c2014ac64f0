package dev.berth.engine;

import dev.berth.engine.api.EngineConfig;
import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.OpenRequest;
import dev.berth.engine.api.OpenResult;
import dev.berth.engine.api.OutputListener;
import dev.berth.engine.api.RunRequest;
import dev.berth.engine.api.TemplateSettings;
import dev.berth.engine.api.Tenant;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.berth.engine.namespace.NamespaceDriver;
import dev.berth.engine.spi.Resources;
import dev.berth.engine.workspace.DriverSelector;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The warm pool on real namespace sandboxes: hits and misses, one claim per member, nothing left at close. */
class WarmPoolTest {
    static final Tenant A = new Tenant("alice", Tenant.Quota.UNLIMITED);
    static final Tenant B = new Tenant("bob", Tenant.Quota.UNLIMITED);
    Path home;
    Engine engine;

    @BeforeEach
    void start() throws Exception {
        home = Files.createTempDirectory("berth-pool-");
        engine = Engine.start(config(2));
    }

    EngineConfig config(int size) {
        return EngineConfig.defaults(home, List.of(new NamespaceDriver(home))).withTemplates(new TemplateSettings(16, size));
    }

    @AfterEach
    void stop() throws Exception {
        if (engine != null) engine.close();
        dev.berth.engine.spi.Trees.delete(home);
    }

    void awaitReady(int n) throws Exception {
        Await.within(java.time.Duration.ofSeconds(120), () -> engine.poolReady("namespace") >= n);
        assertEquals(n, engine.poolReady("namespace"), "pool members ready");
    }

    @Test
    void pool_beyondTheMachinesMemory_isRefusedAtStartWithTheNumbers() throws Exception {
        long have = DriverSelector.machineMemoryMiB();
        org.junit.jupiter.api.Assumptions.assumeTrue(have > 0, "no MemTotal on this machine");
        int size = (int) (have / Resources.DEFAULT.memoryMiB()) + 1;
        Path other = Files.createTempDirectory("berth-pool-big-");
        try {
            EngineException e = assertThrows(EngineException.class, () -> Engine.start(
                    EngineConfig.defaults(other, List.of(new NamespaceDriver(other))).withTemplates(new TemplateSettings(16, size))));
            assertEquals(EngineException.Kind.LIMIT, e.kind());
            assertTrue(e.getMessage().contains(size + " per level x 1 levels") && e.getMessage().contains("the machine has " + have + " MiB"),
                    e.getMessage());
            assertTrue(!Files.exists(other.resolve("workspaces")), "nothing was started in the home");
        } finally {
            dev.berth.engine.spi.Trees.delete(other);
        }
    }

    @Test
    void memoryBudget_boundsThePool_andABudgetBeyondTheMachineIsRefused() throws Exception {
        engine.close();
        int member = Resources.DEFAULT.memoryMiB();
        // 2 per level asked, but the budget holds one member
        engine = Engine.start(EngineConfig.defaults(home, List.of(new NamespaceDriver(home)))
                .withTemplates(new TemplateSettings(16, 2, member + member / 2, false)));
        awaitReady(1);
        assertEquals(1, engine.poolHeld(), "the budget of " + (member + member / 2) + " MiB holds one member of " + member + " MiB");
        assertTrue(engine.poolSummary().contains("memory budget " + (member + member / 2) + " MiB"), engine.poolSummary());
        OpenResult hit = engine.open(A, OpenRequest.ephemeral());
        assertEquals("hit", hit.pool());
        awaitReady(1); // the claimed member's place in the budget is refilled
        engine.closeWorkspace(A, hit.workspace().id(), true);

        long have = DriverSelector.machineMemoryMiB();
        org.junit.jupiter.api.Assumptions.assumeTrue(have > 0, "no MemTotal on this machine");
        Path other = Files.createTempDirectory("berth-pool-budget-");
        try {
            EngineException e = assertThrows(EngineException.class, () -> Engine.start(EngineConfig.defaults(other,
                    List.of(new NamespaceDriver(other))).withTemplates(new TemplateSettings(16, 1, have + 1, false))));
            assertEquals(EngineException.Kind.LIMIT, e.kind());
            assertTrue(e.getMessage().contains("(" + (have + 1) + " MiB) is more than this machine's memory (" + have + " MiB)"),
                    e.getMessage());
            assertTrue(!Files.exists(other.resolve("workspaces")), "nothing was started in the home");
        } finally {
            dev.berth.engine.spi.Trees.delete(other);
        }
    }

    @Test
    void serverDefault_isASmallPoolWithinAnEighthOfTheMachine() {
        TemplateSettings d = TemplateSettings.serverDefault(16);
        assertEquals(1, d.poolSize());
        long have = DriverSelector.machineMemoryMiB();
        assertEquals(have > 0 ? Math.min(2048, have / 8) : 2048, d.poolMemoryMiB());
        assertEquals(0, TemplateSettings.DEFAULT.poolSize(), "the library embeds no pool unless asked");
    }

    String sh(Tenant t, String ws, String cmd) throws EngineException {
        return engine.run(t, RunRequest.of(ws, cmd), OutputListener.NONE).stdout();
    }

    @Test
    void fresh_open_claimsAWaitingSandbox_eachClaimIsFreshAndNeverShared() throws Exception {
        awaitReady(2);
        OpenResult a = engine.open(A, OpenRequest.ephemeral());
        assertEquals("hit", a.pool());
        // the member's warm-up runs (WarmPool.warmUp) left nothing behind in the workspace
        assertEquals("", sh(A, a.workspace().id(), "ls -A"));
        sh(A, a.workspace().id(), "echo alice > mine.txt");
        OpenResult b = engine.open(B, OpenRequest.ephemeral());
        assertEquals("hit", b.pool());
        assertNotEquals(a.workspace().id(), b.workspace().id());
        // the other tenant's claim is another sandbox with nothing of the first one's
        assertEquals("none\n", sh(B, b.workspace().id(), "cat mine.txt 2>/dev/null || echo none"));
        assertEquals("alice\n", sh(A, a.workspace().id(), "cat mine.txt"));
        engine.closeWorkspace(A, a.workspace().id(), true);
        // refilled in the background with new members, never the closed one
        awaitReady(2);
        OpenResult c = engine.open(A, OpenRequest.ephemeral());
        assertEquals("hit", c.pool());
        assertNotEquals(a.workspace().id(), c.workspace().id());
        assertEquals("none\n", sh(A, c.workspace().id(), "cat mine.txt 2>/dev/null || echo none"));
    }

    @Test
    void otherResources_secretsOrAFork_miss() throws Exception {
        awaitReady(2);
        OpenResult big = engine.open(A, new OpenRequest(null, "ephemeral", null, null, new Resources(1, 256, 1024, 512)));
        assertEquals("miss", big.pool());
        engine.open(A, OpenRequest.persistent("p"));
        engine.snapshot(A, "p", "s");
        assertNull(engine.open(A, new OpenRequest(null, "ephemeral", "s", null, null)).pool(), "a fork is not a pool matter");
    }

    @Test
    void close_destroysWaitingMembers_andLeavesNoDirectories() throws Exception {
        awaitReady(2);
        engine.close();
        engine = null;
        try (Stream<Path> ws = Files.list(home.resolve("workspaces")); Stream<Path> rt = Files.list(home.resolve("run"))) {
            assertEquals(List.of(), Stream.concat(ws, rt).toList());
        }
        assertTrue(Files.readAllLines(Path.of("/proc/self/mountinfo")).stream().noneMatch(l -> l.contains(home.toString())));
        assertEquals(0, ProcessHandle.current().descendants().filter(p -> p.info().command().orElse("").contains("bwrap")).count());
    }

    @Test
    void poolBeyondTheMachinesMemory_refusedAtStartWithTheNumbers() throws Exception {
        engine.close();
        engine = null;
        var e = assertThrows(EngineException.class, () -> Engine.start(config(100_000)));
        assertEquals(EngineException.Kind.LIMIT, e.kind());
        assertTrue(e.getMessage().contains("100000 per level x 1 levels x 512 MiB = 51200000 MiB, but the machine has"), e.getMessage());
    }
}
