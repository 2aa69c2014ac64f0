package dev.berth.engine.template;

import dev.berth.engine.evidence.AgentConfigGuard;
import dev.berth.engine.run.Runner;
import dev.berth.engine.spi.IsolationDriver;
import dev.berth.engine.spi.Resources;
import dev.berth.engine.spi.Sandbox;
import dev.berth.engine.spi.SandboxException;
import dev.berth.engine.spi.StartRequest;
import dev.berth.engine.workspace.Ids;
import dev.berth.engine.workspace.Store;
import java.io.IOException;
import java.nio.file.Files;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * Fresh sandboxes started ahead of demand, per isolation level, with the default resources: a fresh
 * {@code open_workspace} claims one instead of starting one. At most {@code size} per level and, over all levels,
 * as many as the memory budget holds (each counted at the default resources' memory limit), the default level first. A member is handed to exactly one open and becomes that
 * workspace (its id, uid and directories were chosen for it); it is never returned, so no tenant sees another's
 * member and no member carries state from an earlier claim. Refilled in the background on one long-lived thread (a
 * sandbox dies with the thread that started it). Members are destroyed and their directories deleted at close; after
 * a crash, recovery deletes them like any half-created workspace (directories without a record). Thread-safe.
 */
public final class WarmPool {
    private static final System.Logger LOG = System.getLogger("berth.engine");

    /** One started sandbox waiting for its workspace. */
    public record Member(String id, Sandbox sandbox, Resources resources) {}

    private final Store store;
    private final int size;
    /** Members (ready and starting, over all levels) the memory budget allows at once. */
    private final long budgetMembers;
    /** The levels in the order they are filled: the default isolation level first. */
    private final List<IsolationDriver> order;
    private final Map<String, ArrayDeque<Member>> ready = new HashMap<>();
    private final Map<String, Integer> starting = new HashMap<>();
    private final Map<String, IsolationDriver> drivers = new HashMap<>();
    private final ExecutorService filler = Executors.newSingleThreadExecutor(Thread.ofPlatform().daemon().name("berth-pool").factory());
    private boolean closed;

    public WarmPool(Store store, int size, long budgetMembers, List<IsolationDriver> levels) {
        this.store = store;
        this.size = size;
        this.budgetMembers = budgetMembers;
        this.order = List.copyOf(levels);
        for (IsolationDriver d : levels) {
            drivers.put(d.name(), d);
            ready.put(d.name(), new ArrayDeque<>());
            starting.put(d.name(), 0);
        }
    }

    /** Starts filling every level, the default one first (the budget may not cover them all). */
    public void start() {
        for (IsolationDriver d : order) refill(d);
    }

    /** The levels the pool fills, in order. */
    public List<String> levels() { return order.stream().map(IsolationDriver::name).toList(); }

    /** Members per level it aims for (before the memory budget). */
    public int size() { return size; }

    /** A waiting member of {@code driver}'s pool started with {@code resources}, or null (a miss). */
    public Member claim(IsolationDriver driver, Resources resources) {
        Member m = null;
        synchronized (this) {
            ArrayDeque<Member> q = ready.get(driver.name());
            if (q == null || closed) return null;
            while (!q.isEmpty()) {
                Member c = q.poll();
                if (c.sandbox().isAlive() && c.resources().equals(resources)) {
                    m = c;
                    break;
                }
                discard(driver, c); // died while waiting, or started with other resources
            }
        }
        if (m == null) {
            refill(driver);
        } else {
            // the refill waits for the claimed workspace's first run to end ({@link #refill}, called by the engine), or
            // REFILL_DELAY_MS when no run comes: started now, it would compete on the CPU with that first command
            java.util.concurrent.CompletableFuture.delayedExecutor(REFILL_DELAY_MS, java.util.concurrent.TimeUnit.MILLISECONDS)
                    .execute(() -> refill(driver));
        }
        return m;
    }

    /** How long after a claim the pool refills at the latest, if the claimed workspace runs nothing before. */
    static final long REFILL_DELAY_MS = 1000;

    /** Members waiting or being started, over all levels (what the memory budget counts). */
    public synchronized int held() {
        int n = 0;
        for (String level : ready.keySet()) n += ready.get(level).size() + starting.get(level);
        return n;
    }

    /** Members waiting for {@code level}. */
    public synchronized int ready(String level) {
        ArrayDeque<Member> q = ready.get(level);
        return q == null ? 0 : q.size();
    }

    /** Starts members of {@code d}'s level up to the size and the budget (idempotent: a full level starts none). */
    public void refill(IsolationDriver d) {
        synchronized (this) {
            if (closed || !ready.containsKey(d.name())) return;
            int want = size - ready.get(d.name()).size() - starting.get(d.name());
            long held = 0;
            for (String level : ready.keySet()) held += ready.get(level).size() + starting.get(level);
            want = (int) Math.min(want, budgetMembers - held); // the memory budget, over all levels
            if (want <= 0) return;
            starting.merge(d.name(), want, Integer::sum);
            for (int i = 0; i < want; i++) filler.execute(() -> startOne(d));
        }
    }

    private void startOne(IsolationDriver d) {
        synchronized (this) {
            if (closed) {
                starting.merge(d.name(), -1, Integer::sum);
                return;
            }
        }
        String id = Ids.next("ws-");
        Member m = null;
        try {
            var dir = store.workspaceDir(id);
            var rt = store.runtimeDir(id);
            Files.createDirectories(dir.resolve("state"));
            Files.createDirectories(rt);
            Store.traverseOnly(rt);
            Store.traverseOnly(dir);
            Sandbox s = d.start(new StartRequest(id, dir.resolve("state"), rt, new StartRequest.Fresh(), Resources.DEFAULT, Runner.PROXY_PORT));
            try {
                warmUp(s, this::isClosed);
            } catch (IOException | RuntimeException e) {
                s.destroy();
                throw e;
            }
            m = new Member(id, s, Resources.DEFAULT);
        } catch (IOException | SandboxException | RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "warm pool: starting a " + d.name() + " sandbox failed: " + e.getMessage());
            d.cleanupRuntime(store.runtimeDir(id));
            Store.deleteQuietly(store.runtimeDir(id));
            Store.deleteQuietly(store.workspaceDir(id));
        }
        synchronized (this) {
            starting.merge(d.name(), -1, Integer::sum);
            if (m == null) return;
            if (closed) {
                discard(d, m);
                return;
            }
            ready.get(d.name()).add(m);
        }
    }

    /** Warm-up runs per member: the first run of a fresh microVM under TCG took 330-450 ms, the third 80-130. */
    static final int WARM_UP_RUNS = 3;

    /**
     * Takes a member through what a run does ({@link AgentConfigGuard}'s look before and after, a confined
     * {@code /bin/sh -c true}) before anyone claims it, so a claim's first run does not pay for first-time work: under
     * TCG, QEMU translating the guest code on the exec path for the first time; anywhere, the guest's page cache and
     * the agent's first confined run. Writes nothing in the workspace. A member whose warm-up fails or hangs is not
     * kept (it may still run the command).
     */
    private static void warmUp(Sandbox s, java.util.function.BooleanSupplier closed) throws IOException {
        var env = Runner.baseEnvironment().entrySet().stream().map(e -> e.getKey() + "=" + e.getValue()).toList();
        var request = new dev.berth.engine.agent.ExecRequest(List.of("/bin/sh", "-c", "true"), env, Runner.DEFAULT_CWD, 30_000, false);
        var quiet = new dev.berth.engine.agent.ExecListener() {
            @Override public void onStdout(byte[] data) { }
            @Override public void onStderr(byte[] data) { }
        };
        for (int i = 0; i < WARM_UP_RUNS; i++) {
            if (closed.getAsBoolean()) return; // the pool is closing: the member is discarded, its warm-up is moot
            AgentConfigGuard.fingerprint(s.agent());
            dev.berth.engine.agent.ExecExit exit;
            try {
                exit = s.agent().exec(request, quiet).exit().get(60, java.util.concurrent.TimeUnit.SECONDS);
            } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
                throw new IOException("warm-up run: " + e, e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("warm-up run interrupted", e);
            }
            if (exit.exitCode() != 0 || exit.termSignal() != 0) throw new IOException("warm-up run ended " + exit);
            AgentConfigGuard.fingerprint(s.agent());
        }
    }

    /**
     * The fast path of a second stop signal: stops refilling and destroys the waiting members now, without waiting
     * for a start in flight (if the process ends before that start does, the next server's recovery deletes what it
     * left, like any half-created workspace).
     */
    public void halt() {
        discardWaiting();
        filler.shutdown();
    }

    /** Marks the pool closed and destroys the members waiting, outside the lock (a destroy unmounts and may take a while). */
    private void discardWaiting() {
        List<Map.Entry<IsolationDriver, Member>> taken = new java.util.ArrayList<>();
        synchronized (this) {
            closed = true;
            for (var e : ready.entrySet()) {
                for (Member m : e.getValue()) taken.add(Map.entry(drivers.get(e.getKey()), m));
                e.getValue().clear();
            }
        }
        for (var e : taken) {
            try {
                discard(e.getKey(), e.getValue());
            } catch (RuntimeException x) {
                LOG.log(System.Logger.Level.WARNING, "warm pool: destroying " + e.getValue().id() + " failed: " + x.getMessage());
            }
        }
    }

    private synchronized boolean isClosed() { return closed; }

    private void discard(IsolationDriver d, Member m) {
        m.sandbox().destroy();
        d.cleanupRuntime(store.runtimeDir(m.id()));
        Store.deleteQuietly(store.runtimeDir(m.id()));
        Store.deleteQuietly(store.workspaceDir(m.id()));
    }

    /**
     * Destroys every waiting member and stops refilling; a start in flight skips the rest of its warm-up and discards
     * its member when it ends, which this waits for (the engine runs this beside the workspaces' own stop).
     */
    public void close() {
        discardWaiting();
        // no interrupt: a start cut short in a mount or a process could leave them behind; queued ones return at once
        filler.shutdown();
        try {
            filler.awaitTermination(60, java.util.concurrent.TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
