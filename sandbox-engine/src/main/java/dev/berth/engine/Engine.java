package dev.berth.engine;

import dev.berth.engine.api.CloseResult;
import dev.berth.engine.api.EngineConfig;
import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.FileContent;
import dev.berth.engine.api.FileListing;
import dev.berth.engine.api.Lifecycle;
import dev.berth.engine.api.OpenRequest;
import dev.berth.engine.api.OpenResult;
import dev.berth.engine.api.OutputListener;
import dev.berth.engine.api.ParkResult;
import dev.berth.engine.api.ProcessStatus;
import dev.berth.engine.api.RunRequest;
import dev.berth.engine.api.RunResult;
import dev.berth.engine.api.SnapshotInfo;
import dev.berth.engine.api.TemplateSettings;
import dev.berth.engine.api.Tenant;
import dev.berth.engine.api.WorkspaceInfo;
import dev.berth.engine.api.WorkspaceState;

import dev.berth.engine.api.EngineException.Kind;
import dev.berth.engine.egress.EgressPolicies;
import dev.berth.engine.evidence.EngineEvidence;
import dev.berth.engine.lifecycle.IdleReaper;
import dev.berth.engine.lifecycle.Recovery;
import dev.berth.engine.lifecycle.WorkspaceLifecycle;
import dev.berth.engine.run.BackgroundProcess;
import dev.berth.engine.run.FileOps;
import dev.berth.engine.run.RunCredentials;
import dev.berth.engine.run.RunFlow;
import dev.berth.engine.run.Runner;
import dev.berth.engine.run.WorkspacePaths;
import dev.berth.engine.spi.Availability;
import dev.berth.engine.spi.Sandbox;
import dev.berth.engine.template.ForkMany;
import dev.berth.engine.template.PoolPlan;
import dev.berth.engine.template.Snapshots;
import dev.berth.engine.template.WarmPool;
import dev.berth.engine.workspace.DriverSelector;
import dev.berth.engine.workspace.HomeLock;
import dev.berth.engine.workspace.Store;
import dev.berth.engine.workspace.Transitions;
import dev.berth.engine.workspace.Workspace;
import dev.berth.engine.workspace.WorkspaceAction;
import dev.berth.engine.workspace.WorkspaceRegistry;
import dev.berth.proxy.policy.Policy;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.Map;

/**
 * The sandbox engine: workspaces, their lifecycle, and snapshots, on top of isolation drivers. Usable as a library
 * without MCP (that is how the tests drive it). This class is the public front; the work is done by
 * {@link WorkspaceLifecycle} (open, resume, park, close), {@link Snapshots}, {@link RunCredentials},
 * {@link Recovery}, {@link IdleReaper} and {@link Runner}, over the {@link WorkspaceRegistry}.
 *
 * <p>Thread-safe. Lifecycle transitions of one workspace are serialised by that workspace's lock; different
 * workspaces proceed in parallel; any number of runs may execute in one workspace at once.
 *
 * <p>Implementation notes: persistent state is written with {@link dev.berth.engine.spi.MetaFile} (atomic, checksummed) after every
 * transition, so a {@code kill -9} at any point leaves a loadable record. The state of a workspace changes only
 * through the table in {@link Transitions}.
 */
public final class Engine implements AutoCloseable {

    private final EngineConfig config;
    private final Store store;
    private final WorkspaceRegistry registry = new WorkspaceRegistry();
    private final DriverSelector drivers;
    private final RunFlow runs;
    private final EngineEvidence evidence;
    private final RunCredentials credentials;
    private final Snapshots snapshots;
    private final WorkspaceLifecycle lifecycle;
    private final IdleReaper reaper;
    private final Ports ports;
    private final EgressApprovals approvals;
    private final Transfers transfers;
    private final ForkMany forks;
    private final WarmPool pool;
    private final dev.berth.engine.image.ImageStore images;
    private volatile boolean closed;

    private final HomeLock homeLock;

    private Engine(EngineConfig config, Store store, HomeLock homeLock, EngineEvidence evidence) {
        this.config = config;
        this.store = store;
        this.homeLock = homeLock;
        this.evidence = evidence;
        registry.onAdd(evidence::bind);
        this.drivers = new DriverSelector(config);
        this.credentials = new RunCredentials(config);
        this.snapshots = new Snapshots(store, registry, evidence, drivers::byName);
        this.images = new dev.berth.engine.image.ImageStore(store.home);
        List<dev.berth.engine.spi.IsolationDriver> poolLevels = PoolPlan.levels(config);
        long budget = config.templates().poolBudgetMembers(dev.berth.engine.spi.Resources.DEFAULT.memoryMiB());
        this.pool = config.templates().poolSize() == 0 || poolLevels.isEmpty() || budget == 0 ? null
                : new WarmPool(store, config.templates().poolSize(), budget, poolLevels);
        this.runs = new RunFlow(store, new Runner(config), evidence, credentials, pool == null ? null : pool::refill);
        this.lifecycle = new WorkspaceLifecycle(config, store, registry, drivers, snapshots, credentials, evidence, images, pool);
        this.reaper = new IdleReaper(config, registry, lifecycle);
        this.ports = new Ports(registry, lifecycle, evidence, config.clock());
        this.approvals = new EgressApprovals(config, registry);
        this.forks = new ForkMany(config, registry, snapshots, lifecycle);
        this.transfers = new Transfers(this, registry, evidence, store);
    }

    /**
     * Opens the engine on {@code config.home()}: takes ownership of the home ({@link HomeLock}; CONFLICT when a live
     * process owns it), then recovers what a previous owner left there.
     */
    public static Engine start(EngineConfig config) throws EngineException {
        PoolPlan.checkFits(config);
        HomeLock lock = HomeLock.acquire(config.home().toAbsolutePath());
        Store store;
        try {
            store = new Store(config.home());
        } catch (IOException e) {
            lock.close();
            throw new EngineException(Kind.UNAVAILABLE, "cannot use " + config.home() + " as Berth home: " + e.getMessage(), e);
        }
        EngineEvidence evidence;
        try {
            evidence = new EngineEvidence(config);
        } catch (EngineException e) {
            lock.close();
            throw e;
        }
        Engine engine = new Engine(config, store, lock, evidence);
        new Recovery(config, store, engine.registry, engine.drivers).run();
        engine.ports.load();
        engine.registerGauges();
        engine.reaper.start();
        if (engine.pool != null) engine.pool.start(); // after recovery: it deletes directories without a record
        return engine;
    }

    /**
     * What the warm pool of an engine started with {@code config} would hold here, without starting it (doctor): the
     * levels it fills, in order, how many members the memory budget allows, and the levels left out and why.
     */
    public static String poolPlan(EngineConfig config) {
        return PoolPlan.describe(config);
    }

    /**
     * The warm pool as configured and as it stands: members per level, memory budget, and how many wait per level
     * (doctor, tests); "off" without one.
     */
    public String poolSummary() {
        if (pool == null) {
            return config.templates().poolSize() == 0 ? "off (pool.size 0)" : "off (no level it could fill here, or a memory budget of 0)";
        }
        TemplateSettings t = config.templates();
        StringBuilder b = new StringBuilder(pool.size() + " per level, " + (t.poolMemoryMiB() == Long.MAX_VALUE ? "no memory budget"
                : "memory budget " + t.poolMemoryMiB() + " MiB") + " (" + dev.berth.engine.spi.Resources.DEFAULT.memoryMiB()
                + " MiB per member); waiting now:");
        for (String level : pool.levels()) b.append(' ').append(level).append(' ').append(pool.ready(level));
        return b.toString();
    }

    // ---------------------------------------------------------------- lifecycle

    public OpenResult open(Tenant tenant, OpenRequest req) throws EngineException {
        ensureOpen();
        return lifecycle.open(tenant, req);
    }

    /**
     * Opens a recipe build's workspace (see {@link RecipeBuild}): a new unnamed namespace
     * workspace on {@code req.image()} whose root is {@code buildRoot} (a scratch copy of that image's tree), entered
     * writable, with the request's egress allowlist like any open.
     */
    public OpenResult openToBuild(Tenant tenant, OpenRequest req, java.nio.file.Path buildRoot) throws EngineException {
        ensureOpen();
        return lifecycle.open(tenant, req, buildRoot);
    }

    /**
     * Opens {@code count} workspaces from {@code req.fromSnapshot()}, started concurrently, all or nothing: each has
     * its own id, host identity and run placeholders. {@code count} must be within 1 and the operator's limit
     * ({@link TemplateSettings#forkLimit}); more than one needs a snapshot and no name.
     */
    public List<OpenResult> openMany(Tenant tenant, OpenRequest req, int count) throws EngineException {
        ensureOpen();
        return forks.open(tenant, req, count, config.templates().forkLimit());
    }

    /** Pool members waiting or being started, over all levels (0 without a pool). */
    int poolHeld() {
        return pool == null ? 0 : pool.held();
    }

    /** Sets the decision outside the engine on every new workspace (a fleet's names and quotas); {@link dev.berth.engine.api.Admission#NONE} by default. */
    public void setAdmission(dev.berth.engine.api.Admission admission) { registry.setAdmission(admission); }

    /** Sandboxes of {@code isolation} waiting in the warm pool (0 without a pool). */
    public int poolReady(String isolation) {
        return pool == null ? 0 : pool.ready(isolation);
    }

    public ParkResult park(Tenant tenant, String ref) throws EngineException {
        ensureOpen();
        return lifecycle.park(registry.resolve(tenant, ref));
    }

    /**
     * Closes a workspace and deletes its files. A persistent workspace is deleted only when {@code delete} is true,
     * so that an agent cannot lose work by calling close where it meant park.
     */
    public CloseResult closeWorkspace(Tenant tenant, String ref, boolean delete) throws EngineException {
        ensureOpen();
        return lifecycle.close(registry.resolve(tenant, ref), delete);
    }

    /** Exposed ports of workspaces (previews of dev servers): expose, unexpose, list, connect. */
    public Ports ports() { return ports; }

    /** Directories in, changes out (open_workspace from_directory, export_changes). */
    public Transfers transfers() { return transfers; }

    /** Human approval of approvable egress hosts: check, record, grant (workspace-scoped, time-boxed). */
    public EgressApprovals egressApprovals() { return approvals; }

    // ---------------------------------------------------------------- snapshots

    public SnapshotInfo snapshot(Tenant tenant, String ref, String name) throws EngineException {
        ensureOpen();
        WorkspaceRegistry.checkName("snapshot", name);
        return snapshots.take(tenant, registry.resolve(tenant, ref), name);
    }

    public List<SnapshotInfo> snapshots(Tenant tenant) throws EngineException {
        return snapshots.list(tenant);
    }

    /**
     * Deletes a snapshot. Refused while anything still builds on it (open workspaces forked from it, or snapshots
     * taken of such workspaces), unless the driver's forks keep what they need of it (microVM).
     */
    public SnapshotInfo deleteSnapshot(Tenant tenant, String ref) throws EngineException {
        ensureOpen();
        return snapshots.delete(tenant, ref);
    }

    // ---------------------------------------------------------------- run

    /** Runs a shell command; blocks until it ends. Output is also streamed to {@code listener}. */
    public RunResult run(Tenant tenant, RunRequest req, OutputListener listener) throws EngineException {
        Policy narrowing = req.egress() == null ? null : EgressPolicies.parse(config, req.egress());
        return withSandbox(tenant, req.workspace(), WorkspaceAction.RUN,
                (ws, sandbox, resumed) -> runs.foreground(tenant, ws, sandbox, resumed, req, listener, narrowing));
    }

    /** Starts a command in the background and returns at once; read its output with {@link #process}. */
    public ProcessStatus startBackground(Tenant tenant, RunRequest req) throws EngineException {
        Policy narrowing = req.egress() == null ? null : EgressPolicies.parse(config, req.egress());
        return withSandbox(tenant, req.workspace(), WorkspaceAction.RUN,
                (ws, sandbox, resumed) -> runs.background(tenant, ws, sandbox, resumed, req, narrowing));
    }

    /**
     * New output and state of a background process. Waits up to {@code waitSeconds} for it to end or write, so a
     * caller can follow it without spinning. {@code signal} ("TERM", "KILL", "INT", "HUP") stops it first.
     */
    public ProcessStatus process(Tenant tenant, String ref, String processId, Long stdoutSince, Long stderrSince,
                                 int waitSeconds, String signal, int maxBytes) throws EngineException {
        Workspace ws = registry.resolve(tenant, ref);
        BackgroundProcess bp = backgroundProcess(tenant, ref, ws, processId);
        String note = bp.signalAndWait(signal, waitSeconds);
        ws.touch();
        return bp.read(stdoutSince, stderrSince, maxBytes, note);
    }

    /**
     * Drives a terminal process (run {tty}): types {@code stdin} (may be empty), then its EOF character when
     * {@code endOfInput}, and sets its size when {@code size} is given. Read what it shows with {@link #process}.
     */
    public void terminal(Tenant tenant, String ref, String processId, byte[] stdin, boolean endOfInput,
                         RunRequest.Terminal size) throws EngineException {
        Workspace ws = registry.resolve(tenant, ref);
        BackgroundProcess bp = backgroundProcess(tenant, ref, ws, processId);
        if (size != null) bp.resize(size.cols(), size.rows());
        if (stdin.length > 0 || endOfInput) bp.input(stdin, endOfInput);
        ws.touch();
    }

    private BackgroundProcess backgroundProcess(Tenant tenant, String ref, Workspace ws, String processId) throws EngineException {
        BackgroundProcess bp = BackgroundProcess.of(ws, processId);
        if (bp == null) {
            throw new EngineException(Kind.NOT_FOUND, "no background process '" + processId + "' in workspace '" + ws.label()
                    + "' (processes end when a namespace or gVisor workspace is parked, and when a workspace cold-boots)");
        }
        if (bp.suspended() && ws.state() == WorkspaceState.PARKED) {
            // frozen in a parked microVM: resume the workspace, which re-attaches it, then go on
            withSandbox(tenant, ref, WorkspaceAction.RUN, (w, sandbox, resumed) -> null);
        }
        return bp;
    }

    // ---------------------------------------------------------------- files

    /** The absolute path inside a workspace that {@code path} names (relative paths are under /workspace). */
    public static String resolvePath(String path) throws EngineException {
        return WorkspacePaths.resolve(path);
    }

    public FileContent readFile(Tenant tenant, String ref, String path, long offset, int maxBytes) throws EngineException {
        String p = WorkspacePaths.resolve(path);
        FileOps.checkRead(offset, maxBytes);
        return withSandbox(tenant, ref, WorkspaceAction.READ_FILES, (ws, sandbox, resumed) -> FileOps.read(sandbox.agent(), p, offset, maxBytes));
    }

    /** Writes (or appends to) a file, creating missing parent directories. Returns the bytes written. */
    public long writeFile(Tenant tenant, String ref, String path, byte[] data, boolean append, Integer mode) throws EngineException {
        String p = WorkspacePaths.resolve(path);
        int m = FileOps.checkWrite(data, mode);
        return withSandbox(tenant, ref, WorkspaceAction.FILES, (ws, sandbox, resumed) -> {
            long n = FileOps.write(sandbox.agent(), p, data, append, m);
            evidence.fileWritten(ws, p, data, append, m);
            return n;
        });
    }

    public FileListing listFiles(Tenant tenant, String ref, String path) throws EngineException {
        String p = WorkspacePaths.resolve(path);
        return withSandbox(tenant, ref, WorkspaceAction.READ_FILES, (ws, sandbox, resumed) -> FileOps.list(sandbox.agent(), p));
    }

    @FunctionalInterface
    interface SandboxCall<T> {
        T call(Workspace ws, Sandbox sandbox, boolean resumed) throws EngineException;
    }

    /**
     * Runs {@code fn} against a running sandbox of the workspace, resuming it first if it is parked. The workspace
     * counts the call in {@code activeRuns} meanwhile, so park and close wait for it instead of pulling the sandbox
     * away underneath.
     */
    <T> T withSandbox(Tenant tenant, String ref, WorkspaceAction action, SandboxCall<T> fn) throws EngineException {
        ensureOpen();
        Workspace ws = registry.resolve(tenant, ref);
        boolean resumed;
        Sandbox sandbox;
        ws.lock.lock();
        try {
            if (ws.admit(action) == Transitions.Effect.INSPECT) {
                // a damaged workspace: its disk in a throwaway sandbox, under the lock (close waits for it)
                Sandbox rescue = lifecycle.inspect(ws);
                try {
                    return fn.call(ws, rescue, false);
                } finally {
                    rescue.destroy();
                }
            }
            resumed = lifecycle.ensureRunning(tenant, ws);
            sandbox = ws.callStarted();
        } finally {
            ws.lock.unlock();
        }
        dev.berth.engine.metrics.CallPhases.mark(resumed ? "engine.admit+resume" : "engine.admit");
        try {
            return fn.call(ws, sandbox, resumed);
        } finally {
            ws.lock.lock();
            try {
                ws.callEnded();
            } finally {
                ws.lock.unlock();
            }
            dev.berth.engine.metrics.CallPhases.mark("engine.release");
        }
    }

    // ---------------------------------------------------------------- queries

    public List<WorkspaceInfo> list(Tenant tenant) {
        return registry.of(tenant).stream().map(Workspace::info).sorted(Comparator.comparing(WorkspaceInfo::createdAt)).toList();
    }

    /** Completes when the background write-out asked for at the end of the workspace's last run has ended (benchmarks, tests). */
    java.util.concurrent.CompletableFuture<Void> flushed(Tenant tenant, String ref) throws EngineException {
        return registry.resolve(tenant, ref).flushed();
    }

    public WorkspaceInfo info(Tenant tenant, String ref) throws EngineException {
        return registry.resolve(tenant, ref).info();
    }

    /** Drivers with their availability, for {@code berth doctor}. */
    public Map<String, Availability> driverReport() { return drivers.report(); }

    /** Name of the driver a workspace gets when open_workspace names none. */
    public String defaultIsolation() throws EngineException {
        return drivers.choose(null, null, null).name();
    }

    public Path home() { return store.home; }

    /** The home's image store (import, list, resolve); removal goes through {@link #removeImage} (in-use check). */
    public dev.berth.engine.image.ImageStore images() { return images; }

    /** Removes an image name (and its content with the last name), refused while a workspace or snapshot uses it. */
    public dev.berth.engine.image.ImageStore.Removal removeImage(String name) throws EngineException {
        try {
            java.util.Map<String, List<String>> inUse = new java.util.TreeMap<>(ImageUsage.of(store.home));
            for (Workspace w : registry.all()) {
                if (w.image() == null) continue;
                List<String> users = inUse.computeIfAbsent(w.image().digest(), k -> new java.util.ArrayList<>());
                String label = ImageUsage.label(w.id, w.name);
                if (!users.contains(label)) users.add(label);
            }
            return images.remove(name, inUse);
        } catch (dev.berth.engine.image.ImageException e) {
            throw new EngineException(e.getMessage().contains("in use") ? Kind.CONFLICT : Kind.NOT_FOUND, e.getMessage(), e);
        } catch (IOException e) {
            throw new EngineException(Kind.UNAVAILABLE, "image store: " + e.getMessage(), e);
        }
    }

    /** The audit trail this engine records into (the MCP layer adds tool calls to it). */
    public dev.berth.engine.audit.AuditTrail auditTrail() { return evidence.trail(); }

    private void registerGauges() {
        List<String> states = java.util.Arrays.stream(WorkspaceState.values()).map(s -> s.name().toLowerCase(java.util.Locale.ROOT)).toList();
        evidence.metrics().gauges(states, drivers.names(), // names only: probing would hold up the start
                (state, iso) -> registry.all().stream().filter(w -> w.driver.name().equals(iso)
                        && w.state().name().toLowerCase(java.util.Locale.ROOT).equals(state)).count(),
                iso -> registry.all().stream().filter(w -> w.driver.name().equals(iso) && w.sandboxLive()).count());
    }

    /** Applies the lifecycle policy once, now, on the engine's clock (tests drive the idle reaper with this). */
    void reapIdle() {
        reaper.reap();
    }

    /** The running sandbox of a workspace (resumed if parked), for tests in this package that look at it from the host. */
    Sandbox sandboxOf(Tenant tenant, String ref) throws EngineException {
        return withSandbox(tenant, ref, WorkspaceAction.FILES, (ws, sandbox, resumed) -> sandbox);
    }

    private void ensureOpen() throws EngineException {
        if (closed) throw new EngineException(Kind.UNAVAILABLE, "the engine is shutting down");
    }

    /**
     * Shuts down: ephemeral workspaces are deleted, running persistent ones are parked (memory kept where the
     * driver can), so the next server finds them as they were. Bounded by {@link dev.berth.engine.lifecycle.WorkspaceStop#BOUND}.
     */
    @Override
    public void close() {
        stop();
    }

    /**
     * {@link #close} that says what it did: commands stopped (SIGTERM, then killed after a grace period) and reaped
     * before their workspace's storage is released, persistent workspaces parked, ephemeral ones closed, within a
     * bound. Returns null when the engine was stopped already (a second caller waits for the first to finish).
     */
    public synchronized dev.berth.engine.lifecycle.StopReport stop() {
        // synchronized: a second caller (a shutdown hook racing the stdin-EOF path) must wait until the workspaces
        // are parked, or the JVM would halt half-way through saving them
        if (closed) return null;
        closed = true;
        reaper.close();
        try {
            // the warm pool's members go beside the workspaces' stop, not after it: a member still starting (seconds on
            // a loaded host) must not hold up the stop past what an MCP client waits before it kills the server
            var poolClosed = pool == null ? java.util.concurrent.CompletableFuture.<Void>completedFuture(null)
                    : java.util.concurrent.CompletableFuture.runAsync(pool::close, r -> Thread.ofVirtual().name("berth-pool-close").start(r));
            var report = lifecycle.shutdown(dev.berth.engine.lifecycle.WorkspaceStop.BOUND, dev.berth.engine.lifecycle.WorkspaceStop.TERM_GRACE);
            for (var d : config.drivers()) d.quiesce(); // parked machines exit after their park returned
            forks.close();
            poolClosed.join();
            lifecycle.starter.close();
            return report;
        } finally {
            if (config.egress() != null) config.egress().proxy().close(); // the engine owns the proxy it was given
            evidence.close(); // after the proxy: its last egress records go into the chain first
            homeLock.close();
        }
    }

    /**
     * The fast path of a second stop signal, while {@link #stop} may still run on another thread: every sandbox
     * killed and its runtime storage released, nothing parked; persistent state stays as a crash would leave it, for
     * the next start to recover. Not synchronized with {@link #stop}; the caller halts the JVM after it.
     */
    public dev.berth.engine.lifecycle.StopReport halt() {
        closed = true;
        if (pool != null) pool.halt(); // its waiting members are sandboxes too; one still starting is left to recovery
        return lifecycle.halt(dev.berth.engine.lifecycle.WorkspaceStop.HALT_BOUND);
    }
}
