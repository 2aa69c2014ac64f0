package dev.berth.engine.contract;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.berth.engine.Await;
import dev.berth.engine.Engine;
import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.OpenRequest;
import dev.berth.engine.api.OpenResult;
import dev.berth.engine.api.OutputListener;
import dev.berth.engine.api.RunRequest;
import dev.berth.engine.api.RunResult;
import dev.berth.engine.api.Tenant;
import dev.berth.engine.audit.AuditTrail;
import dev.berth.engine.host.BtrfsPool;
import dev.berth.engine.spi.Trees;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;

/**
 * Leak-free teardown on every level: many open -> run -> close cycles of ephemeral workspaces (every tenth with a
 * background process still running at close), and fork cycles from a snapshot; then the server's processes, file
 * descriptors, sockets, mounts, loop devices, pool layers, cgroup folders (in every controller hierarchy) and the
 * files and bytes under the home must be what they were before. The first cycle of each case runs before the
 * baseline is taken (it may build a warm base in the image cache).
 *
 * <p>One engine for the class: each case takes its own baseline, so what an earlier case left (the template
 * workspace and its snapshot) is part of the next one's.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
public abstract class AbstractTeardownContractTest {
    /** Processes killed at close may take a moment to be reaped by the kernel: how long the census may take to settle. */
    private static final Duration SETTLE = Duration.ofSeconds(30);

    private Path home;
    private Engine engine;
    /** Every workspace id this class opened: the cgroup census looks for these (other processes share the host). */
    private final List<String> opened = new CopyOnWriteArrayList<>();

    /** The level under test. */
    protected abstract Level level();

    /** Open -> run -> close cycles after the first; the fork case makes {@code max(2, cycles / 5)} rounds of two forks. */
    protected abstract int cycles();

    /**
     * Cycles in flight at once. Four where a cycle mostly waits (process starts, the agent's handshake); a level whose
     * start is CPU-bound (a TCG guest boot) says fewer.
     */
    protected int parallel() {
        return 4;
    }

    @BeforeAll
    void start() throws Exception {
        home = Files.createTempDirectory("berth-leak-contract-");
        engine = level().start(home, c -> c);
    }

    @AfterAll
    void stop() throws Exception {
        if (engine != null) engine.close();
        if (home != null) Trees.delete(home);
    }

    private void cycle(int i) throws EngineException {
        String id = engine.open(Tenant.LOCAL, OpenRequest.ephemeral()).workspace().id();
        opened.add(id);
        RunResult r = engine.run(Tenant.LOCAL, RunRequest.of(id, "echo " + i + " > /workspace/f; cat /workspace/f"), OutputListener.NONE);
        assertEquals(i + "\n", r.stdout(), r.toString());
        if (i % 10 == 0) engine.startBackground(Tenant.LOCAL, RunRequest.of(id, "sleep 300"));
        engine.closeWorkspace(Tenant.LOCAL, id, false);
    }

    /** One numbered cycle. */
    @FunctionalInterface
    private interface Cycle {
        void run(int i) throws Exception;
    }

    /**
     * Cycles 1..{@code n}, {@link #parallel()} at a time: as many cycles as one after the other, with closes racing
     * opens as they do on a server with several agents, in a fraction of the wall time (a cycle mostly waits on
     * process starts and the agent's handshake).
     */
    private void inParallel(int n, Cycle cycle) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(parallel());
        try {
            List<Future<?>> done = new ArrayList<>();
            for (int i = 1; i <= n; i++) {
                int number = i;
                done.add(pool.submit(() -> {
                    cycle.run(number);
                    return null;
                }));
            }
            for (Future<?> f : done) f.get();
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void openRunCloseCycles_leaveNothingBehind() throws Exception {
        cycle(0);
        Map<String, Object> before = census();
        inParallel(cycles(), this::cycle);
        assertEquals(Map.of(), settledDifferences(before), "left behind after " + cycles() + " cycles on " + engine.defaultIsolation());
    }

    @Test
    void forkManyCycles_leaveNothingBehind() throws Exception {
        String tpl = engine.open(Tenant.LOCAL, OpenRequest.persistent("tpl")).workspace().id();
        engine.run(Tenant.LOCAL, RunRequest.of(tpl, "echo prepared > /workspace/state"), OutputListener.NONE);
        engine.snapshot(Tenant.LOCAL, tpl, "tpl-snap");
        engine.park(Tenant.LOCAL, tpl);
        // the snapshot's content digest is hashed in the background with the image open: the baseline waits for it
        Path audit = AuditTrail.tenantLog(home.resolve("audit"), "local");
        Await.until("the snapshot's digest is recorded", Duration.ofSeconds(300),
                () -> Files.exists(audit) && Files.readString(audit).contains("\"snapshot_digest\""));
        forkCycle(0);
        Map<String, Object> before = census(); // after a first cycle, as above
        inParallel(Math.max(2, cycles() / 5), this::forkCycle);
        assertEquals(Map.of(), settledDifferences(before), "left behind after fork cycles on " + engine.defaultIsolation());
    }

    /** Two forks of the template's snapshot, each run and closed. */
    private void forkCycle(int i) throws EngineException {
        for (OpenResult f : engine.openMany(Tenant.LOCAL, new OpenRequest(null, "ephemeral", "tpl-snap", null, null), 2)) {
            String id = f.workspace().id();
            opened.add(id);
            RunResult r = engine.run(Tenant.LOCAL, RunRequest.of(id, "cat /workspace/state"), OutputListener.NONE);
            assertEquals("prepared\n", r.stdout(), "fork cycle " + i + ": " + r);
            engine.closeWorkspace(Tenant.LOCAL, id, false);
        }
    }

    /** The differences from {@code before} once the census is back to it, or as they stand after {@link #SETTLE}. */
    private Map<String, String> settledDifferences(Map<String, Object> before) throws Exception {
        List<Map<String, Object>> last = new ArrayList<>(List.of(Map.of()));
        try {
            Await.until("nothing in the census has grown past its baseline", SETTLE, () -> {
                last.set(0, census());
                return differences(before, last.get(0)).isEmpty();
            });
        } catch (AssertionError notSettled) {
            // the caller's assertion names what is left
        }
        return differences(before, last.get(0));
    }

    /** What changed, per census entry: numbers as before -> after, lists as what was added and removed. */
    /**
     * What grew, per census entry: numbers that went up (before -> after), lists with entries that were not there
     * before (what was added, and what went away beside it). Something that went away is not a leak: the layer pool,
     * for one, may unmount its image and detach its loop device once no workspace holds it, which under load can
     * happen after the baseline was taken.
     */
    static Map<String, String> differences(Map<String, Object> before, Map<String, Object> after) {
        Map<String, String> out = new LinkedHashMap<>();
        for (String k : before.keySet()) {
            Object b = before.get(k);
            Object a = after.get(k);
            if (b.equals(a)) continue;
            if (b instanceof List<?> lb && a instanceof List<?> la) {
                List<Object> added = new ArrayList<>(la);
                added.removeAll(lb);
                if (added.isEmpty()) continue;
                List<Object> removed = new ArrayList<>(lb);
                removed.removeAll(la);
                out.put(k, "added " + added.subList(0, Math.min(20, added.size())) + (added.size() > 20 ? " (+" + (added.size() - 20) + ")" : "")
                        + ", removed " + removed.subList(0, Math.min(20, removed.size())));
            } else if (b instanceof Number nb && a instanceof Number na) {
                if (na.longValue() > nb.longValue()) out.put(k, b + " -> " + a);
            } else {
                out.put(k, b + " -> " + a);
            }
        }
        return out;
    }

    /** What a leak would show in. */
    private Map<String, Object> census() throws IOException {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("processes", ProcessHandle.current().descendants().filter(ProcessHandle::isAlive).count());
        List<String> fds = new ArrayList<>();
        try (Stream<Path> s = Files.list(Path.of("/proc/self/fd"))) {
            for (Path p : s.toList()) {
                try {
                    fds.add(Files.readSymbolicLink(p).toString());
                } catch (IOException gone) {
                    // the descriptor that listed the directory
                }
            }
        }
        m.put("fds", fds.size());
        m.put("sockets", fds.stream().filter(f -> f.startsWith("socket:")).count());
        m.put("mounts under home", Files.readAllLines(Path.of("/proc/self/mountinfo")).stream()
                .filter(l -> l.contains(home.toString())).toList());
        List<String> loops = new ArrayList<>();
        try (Stream<Path> s = Files.list(Path.of("/sys/block"))) {
            for (Path b : s.filter(p -> p.getFileName().toString().startsWith("loop")).toList()) {
                Path backing = b.resolve("loop/backing_file");
                try {
                    if (Files.readString(backing).contains(home.toString())) loops.add(b.getFileName().toString());
                } catch (IOException detached) {
                    // not attached
                }
            }
        }
        m.put("loop devices on files under home", loops);
        // the namespace driver's layer pool: subvolumes live inside its image, where the walk below does not look
        var pool = BtrfsPool.at(home.resolve("pool"));
        if (Files.exists(pool.image())) {
            try (var lease = pool.open()) {
                m.put("layers in the pool", lease.names());
            }
        }
        m.put("cgroup folders of these workspaces", cgroupFolders().stream()
                .filter(f -> opened.stream().anyMatch(f::contains)).toList());
        List<Path> files = new ArrayList<>();
        try (Stream<Path> s = Files.walk(home)) {
            s.filter(p -> !p.startsWith(home.resolve("audit"))).forEach(files::add);
        }
        m.put("paths under home", files.stream().map(home::relativize).map(Path::toString).sorted().toList());
        m.put("bytes under home", files.stream().filter(p -> Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS)).mapToLong(p -> {
            try {
                return Files.size(p);
            } catch (IOException e) {
                return 0;
            }
        }).sum());
        return m;
    }

    /** Every folder below a berth* group in every cgroup controller hierarchy (v1 and v2). */
    private static List<String> cgroupFolders() throws IOException {
        List<String> out = new ArrayList<>();
        Path root = Path.of("/sys/fs/cgroup");
        if (!Files.isDirectory(root)) return out;
        List<Path> hierarchies = new ArrayList<>(List.of(root));
        try (Stream<Path> s = Files.list(root)) {
            s.filter(Files::isDirectory).forEach(hierarchies::add);
        }
        for (Path h : hierarchies) {
            try (Stream<Path> s = Files.list(h)) {
                for (Path g : s.filter(p -> p.getFileName().toString().startsWith("berth") && Files.isDirectory(p)).toList()) {
                    try (Stream<Path> w = Files.walk(g)) {
                        w.filter(Files::isDirectory).filter(p -> !p.equals(g)).forEach(p -> out.add(root.relativize(p).toString()));
                    } catch (IOException | UncheckedIOException raced) {
                        // a group removed while we looked: not a leak
                    }
                }
            } catch (IOException ignored) {
                // a controller we cannot list holds nothing of ours
            }
        }
        out.sort(null);
        return out;
    }
}
