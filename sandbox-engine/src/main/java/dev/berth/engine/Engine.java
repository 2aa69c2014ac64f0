package dev.berth.engine;

import dev.berth.engine.EngineException.Kind;
import dev.berth.engine.spi.IsolationDriver;
import dev.berth.engine.spi.Resources;
import dev.berth.engine.spi.Sandbox;
import dev.berth.engine.spi.SandboxException;
import dev.berth.engine.spi.StartRequest;
import dev.berth.proxy.Policy;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;

/**
 * The sandbox engine: workspaces, their lifecycle, and snapshots, on top of isolation drivers. Usable as a library
 * without MCP (that is how the tests drive it).
 *
 * <p>Thread-safe. Lifecycle transitions of one workspace are serialised by that workspace's lock; different
 * workspaces proceed in parallel; any number of runs may execute in one workspace at once.
 *
 * <p>Implementation notes: persistent state is written with {@link MetaFile} (atomic, checksummed) after every
 * transition, so a {@code kill -9} at any point leaves a loadable record. At start-up, ephemeral leftovers are
 * deleted, runtime directories are cleaned through every driver, and persistent workspaces come back parked.
 */
public final class Engine implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger("berth.engine");
    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,62}");
    private static final SecureRandom RANDOM = new SecureRandom();
    static final int MAX_PROCESSES = 32;


    private final EngineConfig config;
    private final Store store;
    private final Map<String, IsolationDriver> drivers = new LinkedHashMap<>();
    private final Map<String, Workspace> workspaces = new ConcurrentHashMap<>();
    private final Object namesLock = new Object();
    private final Runner runner;
    private final EngineAudit audit;
    private final SnapshotCatalog snapshotCatalog;
    private final ScheduledExecutorService idleReaper;
    private volatile boolean closed;

    private Engine(EngineConfig config, Store store) {
        this.config = config;
        this.store = store;
        for (IsolationDriver d : config.drivers()) drivers.put(d.name(), d);
        this.runner = new Runner(config);
        this.audit = new EngineAudit(store.home.resolve("audit"));
        this.snapshotCatalog = new SnapshotCatalog(store);
        this.idleReaper = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "berth-idle-reaper");
            t.setDaemon(true);
            return t;
        });
    }

    /** Opens the engine on {@code config.home()}, recovering what a previous process left there. */
    public static Engine start(EngineConfig config) throws EngineException {
        Store store;
        try {
            store = new Store(config.home());
        } catch (IOException e) {
            throw new EngineException(Kind.UNAVAILABLE, "cannot use " + config.home() + " as Berth home: " + e.getMessage(), e);
        }
        Engine engine = new Engine(config, store);
        engine.recover();
        long period = Math.max(5, Math.min(60, Math.min(positive(config.idleParkSeconds()), positive(config.idleCloseSeconds())) / 4));
        engine.idleReaper.scheduleWithFixedDelay(engine::reapIdle, period, period, TimeUnit.SECONDS);
        return engine;
    }

    private static long positive(long v) { return v > 0 ? v : Long.MAX_VALUE / 8; }

    // ---------------------------------------------------------------- recovery

    private void recover() {
        try {
            for (Path rt : Store.children(store.run)) {
                for (IsolationDriver d : drivers.values()) d.cleanupRuntime(rt);
                Store.deleteTree(rt);
            }
            for (Path dir : Store.children(store.workspaces)) recoverWorkspace(dir);
            for (Path tmp : listHidden(store.snapshots)) Store.deleteTree(tmp);
        } catch (IOException e) {
            LOG.log(System.Logger.Level.WARNING, "recovery of " + store.home + " incomplete: " + e.getMessage());
        }
    }

    private static List<Path> listHidden(Path dir) throws IOException {
        try (var s = Files.list(dir)) {
            return s.filter(p -> p.getFileName().toString().startsWith(".")).toList();
        }
    }

    private void recoverWorkspace(Path dir) throws IOException {
        Store.WorkspaceRecord rec;
        try {
            rec = store.loadWorkspace(dir);
        } catch (IOException e) {
            if (!Files.exists(dir.resolve("workspace.meta"))) {
                // creation never finished: nothing was promised to anyone
                Store.deleteTree(dir);
            } else {
                LOG.log(System.Logger.Level.WARNING, "skipping unreadable workspace " + dir + ": " + e.getMessage());
            }
            return;
        }
        if (rec.lifecycle().equals("ephemeral")) {
            Store.deleteTree(dir);
            return;
        }
        IsolationDriver driver = drivers.get(rec.isolation());
        if (driver == null) {
            LOG.log(System.Logger.Level.WARNING, "workspace " + rec.id() + " needs driver '" + rec.isolation()
                    + "', which is not configured; left on disk untouched");
            return;
        }
        String tenant = rec.tenant() == null ? Tenant.LOCAL.id() : rec.tenant();
        Policy policy;
        try {
            policy = egressPolicy(rec.egress());
        } catch (EngineException e) {
            policy = Policy.denyAll(); // the operator's ceiling changed under it: nothing rather than too much
        }
        Workspace ws = new Workspace(rec.id(), tenant, rec.name(), Lifecycle.PERSISTENT, driver, Instant.parse(rec.createdAt()),
                rec.fromSnapshot(), rec.resources() == null ? Resources.DEFAULT : rec.resources(), dir,
                store.runtimeDir(rec.id()), WorkspaceState.PARKED, rec.egress(),
                new WorkspaceEgress(config.egress(), rec.id(), policy, secretsOrNone(rec.secrets())), rec.secrets());
        ws.lastUsedAt = Instant.parse(rec.lastUsedAt());
        workspaces.put(ws.id, ws);
        if (!rec.state().equals("parked")) store.save(ws); // it was running when the last server died
    }

    // ---------------------------------------------------------------- open

    public OpenResult open(Tenant tenant, OpenRequest req) throws EngineException {
        ensureOpen();
        String name = req.name();
        if (name != null && !NAME.matcher(name).matches()) {
            throw new EngineException(Kind.INVALID_ARGUMENT, "name '" + name
                    + "' is not allowed: use 1-63 letters, digits, '.', '_' or '-', starting with a letter or digit");
        }
        String lc = req.lifecycle() == null ? "auto" : req.lifecycle();
        Lifecycle lifecycle = lc.equals("auto") ? (name != null ? Lifecycle.PERSISTENT : Lifecycle.EPHEMERAL) : Lifecycle.parse(lc);
        Store.SnapshotRecord snap = req.fromSnapshot() == null ? null : snapshotCatalog.find(tenant, req.fromSnapshot());
        IsolationDriver driver = chooseDriver(req.isolation(), snap);
        Resources resources = req.resources() == null ? Resources.DEFAULT : validate(req.resources());
        Policy egressPolicy = egressPolicy(req.egress());
        List<String> secrets = checkSecrets(tenant, req.secrets());

        Workspace ws;
        synchronized (namesLock) {
            if (name != null) {
                Optional<Workspace> existing = byName(tenant, name);
                if (existing.isPresent()) return reopen(tenant, existing.get(), req, lifecycle, driver);
            }
            long live = workspaces.values().stream().filter(w -> w.state != WorkspaceState.CLOSED).count();
            if (live >= config.maxWorkspaces()) {
                throw new EngineException(Kind.LIMIT, "cannot open another workspace: " + live + " are open (limit "
                        + config.maxWorkspaces() + "); close or park one you no longer need");
            }
            checkQuota(tenant, resources, true);
            String id = newId("ws-");
            ws = new Workspace(id, tenant.id(), name, lifecycle, driver, Instant.now(), snap == null ? null : snap.id(), resources,
                    store.workspaceDir(id), store.runtimeDir(id), WorkspaceState.CREATING,
                    req.egress() == null ? null : List.copyOf(req.egress()),
                    new WorkspaceEgress(config.egress(), id, egressPolicy, secrets), secrets);
            ws.lock.lock();
            workspaces.put(id, ws);
        }
        try {
            Files.createDirectories(ws.stateDir());
            StartRequest.Mode mode = snap == null ? new StartRequest.Fresh()
                    : new StartRequest.Fork(store.snapshotDir(snap.id()).resolve("state"));
            ws.sandbox = driver.start(startRequest(ws, mode));
            connect(ws);
            ws.state = WorkspaceState.RUNNING;
            store.save(ws);
            String note = snap == null ? "new " + lifecycle.wireName() + " workspace"
                    : "forked from snapshot '" + snap.name() + "' (" + (snap.memoryKept() ? "files and memory" : "files") + ")";
            return new OpenResult(ws.info(), true, false, note);
        } catch (SandboxException | IOException | EngineException e) {
            workspaces.remove(ws.id);
            ws.state = WorkspaceState.CLOSED;
            if (ws.sandbox != null) ws.sandbox.destroy();
            deleteQuietly(ws.dir);
            deleteQuietly(ws.runtimeDir);
            throw new EngineException(Kind.UNAVAILABLE, "could not start a " + driver.name() + " sandbox: " + e.getMessage(), e);
        } finally {
            ws.lock.unlock();
        }
    }

    private OpenResult reopen(Tenant tenant, Workspace ws, OpenRequest req, Lifecycle lifecycle, IsolationDriver driver) throws EngineException {
        if (req.fromSnapshot() != null) {
            throw new EngineException(Kind.CONFLICT, "a workspace named '" + ws.name + "' exists already; from_snapshot"
                    + " creates a new one, so give it another name (or none)");
        }
        if (req.lifecycle() != null && !req.lifecycle().equals("auto") && lifecycle != ws.lifecycle) {
            throw new EngineException(Kind.CONFLICT, "workspace '" + ws.name + "' exists and is " + ws.lifecycle.wireName()
                    + "; omit lifecycle to reopen it, or pick another name");
        }
        if (req.isolation() != null && !driver.name().equals(ws.driver.name())) {
            throw new EngineException(Kind.CONFLICT, "workspace '" + ws.name + "' exists with isolation '"
                    + ws.driver.name() + "'; omit isolation to reopen it, or pick another name");
        }
        if (req.secrets() != null && !new java.util.HashSet<>(req.secrets()).equals(new java.util.HashSet<>(ws.secrets))) {
            throw new EngineException(Kind.CONFLICT, "workspace '" + ws.name + "' exists with secrets " + ws.secrets
                    + "; omit secrets to reopen it, or pick another name");
        }
        ws.lock.lock();
        try {
            WorkspaceAction.check(WorkspaceAction.RUN, ws.state, ws.label());
            boolean resumed = ensureRunning(tenant, ws);
            return new OpenResult(ws.info(), false, resumed, resumed
                    ? "reopened and resumed the parked workspace" : "reopened the running workspace");
        } finally {
            ws.lock.unlock();
        }
    }

    // ---------------------------------------------------------------- run

    /** Runs a shell command; blocks until it ends. Output is also streamed to {@code listener}. */
    public RunResult run(Tenant tenant, RunRequest req, OutputListener listener) throws EngineException {
        Policy narrowing = req.egress() == null ? null : parsePolicy(req.egress());
        return withSandbox(tenant, req.workspace(), WorkspaceAction.RUN, (ws, sandbox, resumed) -> {
            String runId = newId("run-");
            Credentials creds = credentials(tenant, ws, runId, req.secrets());
            WorkspaceEgress.RunEgress egress = ws.egress.begin(runId, narrowing);
            RunResult r;
            try {
                r = runner.run(ws, sandbox, req, listener, creds.injected(), egress);
            } finally {
                ws.egress.end(egress);
                creds.revoke(); // the placeholders are worthless from here on
            }
            r = r.withEgressDenied(egress.denials());
            r = r.withSecrets(creds.used(), creds.note());
            if (!r.agentConfigChanges().isEmpty()) audit.agentConfig(ws, r.agentConfigChanges());
            if (!resumed) return r;
            return r.withResumed("the workspace was parked and was resumed for this run"
                    + (ws.driver.capabilities().parkKeepsMemory() ? "" : " (files kept; processes had stopped)"));
        });
    }

    /** Starts a command in the background and returns at once; read its output with {@link #process}. */
    public ProcessStatus startBackground(Tenant tenant, RunRequest req) throws EngineException {
        Policy narrowing = req.egress() == null ? null : parsePolicy(req.egress());
        return withSandbox(tenant, req.workspace(), WorkspaceAction.RUN, (ws, sandbox, resumed) -> {
            synchronized (ws.processes) {
                ws.processes.values().removeIf(p -> !p.running() && p.handle().exit().isDone() && ws.processes.size() > MAX_PROCESSES / 2);
                if (ws.processes.size() >= MAX_PROCESSES) {
                    throw new EngineException(Kind.LIMIT, "workspace '" + ws.label() + "' has " + ws.processes.size()
                            + " background processes (limit " + MAX_PROCESSES + "); stop some with run {process, signal}");
                }
            }
            BackgroundProcess bp = new BackgroundProcess(newId("p-"), ws.id, req.command());
            Credentials creds = credentials(tenant, ws, bp.id, req.secrets());
            WorkspaceEgress.RunEgress egress = ws.egress.begin(bp.id, narrowing); // its egress narrowing and its tunnels
            try {
                bp.attach(runner.start(ws, sandbox, req, bp, creds.injected(), egress));
            } catch (EngineException | RuntimeException e) {
                ws.egress.end(egress);
                creds.revoke();
                throw e;
            }
            // a background run's placeholders live as long as its process: revoked when it ends or is forgotten
            bp.onEnd(() -> {
                ws.egress.end(egress);
                creds.revoke();
            });
            synchronized (ws.processes) {
                ws.processes.put(bp.id, bp);
            }
            return bp.read(0L, 0L, 0, resumed ? "started; the workspace was parked and was resumed first" : "started");
        });
    }

    /**
     * New output and state of a background process. Waits up to {@code waitSeconds} for it to end or write, so a
     * caller can follow it without spinning. {@code signal} ("TERM", "KILL", "INT", "HUP") stops it first.
     */
    public ProcessStatus process(Tenant tenant, String ref, String processId, Long stdoutSince, Long stderrSince,
                                 int waitSeconds, String signal, int maxBytes) throws EngineException {
        Workspace ws = resolve(tenant, ref);
        BackgroundProcess bp;
        synchronized (ws.processes) {
            bp = ws.processes.get(processId);
        }
        if (bp == null) {
            throw new EngineException(Kind.NOT_FOUND, "no background process '" + processId + "' in workspace '" + ws.label()
                    + "' (processes are forgotten when the workspace is parked or the server restarts)");
        }
        String note = bp.signalAndWait(signal, waitSeconds);
        ws.lastUsedAt = Instant.now();
        return bp.read(stdoutSince, stderrSince, maxBytes, note);
    }

    /** The absolute path inside a workspace that {@code path} names (relative paths are under /workspace). */
    public static String resolvePath(String path) throws EngineException {
        return WorkspacePaths.resolve(path);
    }

    public FileContent readFile(Tenant tenant, String ref, String path, long offset, int maxBytes) throws EngineException {
        String p = WorkspacePaths.resolve(path);
        FileOps.checkRead(offset, maxBytes);
        return withSandbox(tenant, ref, WorkspaceAction.FILES, (ws, sandbox, resumed) -> FileOps.read(sandbox.agent(), p, offset, maxBytes));
    }

    /** Writes (or appends to) a file, creating missing parent directories. Returns the bytes written. */
    public long writeFile(Tenant tenant, String ref, String path, byte[] data, boolean append, Integer mode) throws EngineException {
        String p = WorkspacePaths.resolve(path);
        int m = FileOps.checkWrite(data, mode);
        return withSandbox(tenant, ref, WorkspaceAction.FILES, (ws, sandbox, resumed) -> FileOps.write(sandbox.agent(), p, data, append, m));
    }

    public FileListing listFiles(Tenant tenant, String ref, String path) throws EngineException {
        String p = WorkspacePaths.resolve(path);
        return withSandbox(tenant, ref, WorkspaceAction.FILES, (ws, sandbox, resumed) -> FileOps.list(sandbox.agent(), p));
    }

    @FunctionalInterface
    private interface SandboxCall<T> {
        T call(Workspace ws, Sandbox sandbox, boolean resumed) throws EngineException;
    }

    /**
     * Runs {@code fn} against a running sandbox of the workspace, resuming it first if it is parked. The workspace
     * counts the call in {@code activeRuns} meanwhile, so park and close wait for it instead of pulling the sandbox
     * away underneath.
     */
    private <T> T withSandbox(Tenant tenant, String ref, WorkspaceAction action, SandboxCall<T> fn) throws EngineException {
        ensureOpen();
        Workspace ws = resolve(tenant, ref);
        boolean resumed;
        Sandbox sandbox;
        ws.lock.lock();
        try {
            WorkspaceAction.check(action, ws.state, ws.label());
            resumed = ensureRunning(tenant, ws);
            ws.activeRuns++;
            sandbox = ws.sandbox;
        } finally {
            ws.lock.unlock();
        }
        try {
            return fn.call(ws, sandbox, resumed);
        } finally {
            ws.lock.lock();
            try {
                ws.activeRuns--;
                ws.lastUsedAt = Instant.now();
            } finally {
                ws.lock.unlock();
            }
        }
    }

    /** Starts the sandbox of a parked workspace (or one whose sandbox died). Caller holds the lock. */
    private boolean ensureRunning(Tenant tenant, Workspace ws) throws EngineException {
        if (ws.state == WorkspaceState.RUNNING && ws.sandbox != null && ws.sandbox.isAlive() && ws.sandbox.agent().isOpen()) {
            return false;
        }
        if (ws.state == WorkspaceState.RUNNING && ws.sandbox != null) {
            LOG.log(System.Logger.Level.WARNING, "sandbox of " + ws.id + " had stopped; restarting it");
            ws.sandbox.destroy();
            ws.sandbox = null;
        }
        if (ws.state == WorkspaceState.PARKED) checkQuota(tenant, ws.resources, false);
        ws.state = WorkspaceState.RESUMING;
        try {
            ws.sandbox = ws.driver.start(startRequest(ws, new StartRequest.Resume()));
            connect(ws);
            ws.state = WorkspaceState.RUNNING;
            ws.lastUsedAt = Instant.now();
            store.save(ws);
            return true;
        } catch (SandboxException | IOException | EngineException e) {
            ws.state = WorkspaceState.PARKED;
            if (ws.sandbox != null) ws.sandbox.destroy();
            ws.sandbox = null;
            throw new EngineException(Kind.UNAVAILABLE, "could not resume workspace '" + ws.label() + "': "
                    + e.getMessage() + "; its files are kept, try again or run `berth doctor`", e);
        }
    }

    // ---------------------------------------------------------------- park

    public ParkResult park(Tenant tenant, String ref) throws EngineException {
        ensureOpen();
        Workspace ws = resolve(tenant, ref);
        ws.lock.lock();
        try {
            WorkspaceAction.check(WorkspaceAction.PARK, ws.state, ws.label());
            if (ws.state == WorkspaceState.PARKED) {
                return new ParkResult(ws.info(), false, true, Store.treeBytes(ws.stateDir()), 0, "it was parked already");
            }
            if (ws.activeRuns > 0) {
                throw new EngineException(Kind.CONFLICT, "cannot park workspace '" + ws.label() + "': " + ws.activeRuns
                        + " run(s) in progress; wait for them to finish (or let their timeout end them) and park again");
            }
            return doPark(ws);
        } finally {
            ws.lock.unlock();
        }
    }

    private ParkResult doPark(Workspace ws) throws EngineException {
        ws.state = WorkspaceState.PARKING;
        ws.forgetProcesses();
        try {
            Sandbox.ParkOutcome out = ws.sandbox.park();
            ws.sandbox = null;
            ws.state = WorkspaceState.PARKED;
            store.save(ws);
            deleteQuietly(ws.runtimeDir);
            String note = out.memoryKept() ? "files, memory and running processes kept; the next run resumes exactly here"
                    : "files kept; running processes were stopped (the " + ws.driver.name()
                    + " driver cannot keep memory); the next run starts the workspace again";
            return new ParkResult(ws.info(), out.memoryKept(), false, out.stateBytes(), out.millis(), note);
        } catch (SandboxException | IOException e) {
            // the sandbox is in an unknown state: stop it, keep the files
            if (ws.sandbox != null) ws.sandbox.destroy();
            ws.sandbox = null;
            ws.state = WorkspaceState.PARKED;
            try { store.save(ws); } catch (IOException ignored) { }
            throw new EngineException(Kind.INTERNAL, "parking workspace '" + ws.label() + "' failed: " + e.getMessage()
                    + "; the sandbox was stopped and its files kept", e);
        }
    }

    // ---------------------------------------------------------------- snapshot

    public SnapshotInfo snapshot(Tenant tenant, String ref, String name) throws EngineException {
        ensureOpen();
        if (name != null && !NAME.matcher(name).matches()) {
            throw new EngineException(Kind.INVALID_ARGUMENT, "snapshot name '" + name + "' is not allowed: use 1-63 letters,"
                    + " digits, '.', '_' or '-', starting with a letter or digit");
        }
        Workspace ws = resolve(tenant, ref);
        ws.lock.lock();
        try {
            WorkspaceAction.check(WorkspaceAction.SNAPSHOT, ws.state, ws.label());
            synchronized (namesLock) {
                if (name != null && snapshotCatalog.byName(tenant, name).isPresent()) {
                    throw new EngineException(Kind.CONFLICT, "a snapshot named '" + name + "' exists already; pick another name");
                }
            }
            String id = newId("snap-");
            Path tmp = store.snapshots.resolve("." + id);
            Path state = tmp.resolve("state");
            Files.createDirectories(state);
            Sandbox.ParkOutcome out;
            try {
                if (ws.state == WorkspaceState.RUNNING) {
                    out = ws.sandbox.snapshot(state);
                } else {
                    long t0 = System.nanoTime();
                    ws.driver.snapshotParked(ws.stateDir(), state);
                    out = new Sandbox.ParkOutcome(ws.driver.capabilities().snapshotKeepsMemory() && hasMemory(state),
                            Store.treeBytes(state), (System.nanoTime() - t0) / 1_000_000);
                }
            } catch (SandboxException | RuntimeException e) {
                deleteQuietly(tmp);
                throw new EngineException(Kind.INTERNAL, "snapshot of workspace '" + ws.label() + "' failed: " + e.getMessage()
                        + "; the workspace is unchanged", e);
            }
            var rec = new Store.SnapshotRecord(id, tenant.id(), name == null ? id : name, ws.id, ws.driver.name(), out.memoryKept(),
                    out.stateBytes(), Instant.now().toString(), ws.fromSnapshot);
            store.save(tmp, rec);
            Files.move(tmp, store.snapshotDir(id), java.nio.file.StandardCopyOption.ATOMIC_MOVE);
            return rec.info();
        } catch (IOException e) {
            throw new EngineException(Kind.INTERNAL, "snapshot of workspace '" + ws.label() + "' failed: " + e.getMessage(), e);
        } finally {
            ws.lock.unlock();
        }
    }

    private static boolean hasMemory(Path snapshotState) {
        return Files.exists(snapshotState.resolve("memory"));
    }

    public List<SnapshotInfo> snapshots(Tenant tenant) throws EngineException {
        return snapshotCatalog.list(tenant);
    }

    /**
     * Deletes a snapshot. Refused while anything still builds on it (a microVM fork maps its snapshot's memory and
     * uses its disk as backing file): open workspaces forked from it, or snapshots taken of such workspaces.
     */
    public SnapshotInfo deleteSnapshot(Tenant tenant, String ref) throws EngineException {
        ensureOpen();
        synchronized (namesLock) {
            Store.SnapshotRecord snap = snapshotCatalog.find(tenant, ref);
            List<String> users = new ArrayList<>();
            for (Workspace w : workspaces.values()) {
                if (snap.id().equals(w.fromSnapshot) && w.state != WorkspaceState.CLOSED) users.add("workspace " + w.label());
            }
            for (Store.SnapshotRecord other : snapshotCatalog.all()) {
                if (snap.id().equals(other.parent())) users.add("snapshot " + other.name());
            }
            if (!users.isEmpty()) {
                throw new EngineException(Kind.CONFLICT, "cannot delete snapshot '" + snap.name() + "': " + String.join(", ", users)
                        + " still build" + (users.size() == 1 ? "s" : "") + " on it; close or delete them first");
            }
            Path dir = store.snapshotDir(snap.id());
            Path doomed = store.snapshots.resolve(".deleted-" + snap.id());
            try {
                // rename first: a crash half-way leaves a hidden directory that start-up removes, never half a snapshot
                Files.move(dir, doomed, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
                Store.deleteTree(doomed);
            } catch (IOException e) {
                throw new EngineException(Kind.INTERNAL, "deleting snapshot '" + snap.name() + "' failed: " + e.getMessage(), e);
            }
            return snap.info();
        }
    }

    // ---------------------------------------------------------------- close

    /**
     * Closes a workspace and deletes its files. A persistent workspace is deleted only when {@code delete} is true,
     * so that an agent cannot lose work by calling close where it meant park.
     */
    public CloseResult closeWorkspace(Tenant tenant, String ref, boolean delete) throws EngineException {
        ensureOpen();
        Workspace ws = resolve(tenant, ref);
        ws.lock.lock();
        try {
            WorkspaceAction.check(WorkspaceAction.CLOSE, ws.state, ws.label());
            if (ws.lifecycle == Lifecycle.PERSISTENT && !delete) {
                throw new EngineException(Kind.CONFLICT, "workspace '" + ws.label() + "' is persistent: closing deletes"
                        + " its files for good. Use park to keep it, or call close_workspace with delete: true");
            }
            if (ws.activeRuns > 0) {
                throw new EngineException(Kind.CONFLICT, "cannot close workspace '" + ws.label() + "': " + ws.activeRuns
                        + " run(s) in progress; wait for them to finish");
            }
            destroyAndDelete(ws);
            return new CloseResult(ws.id, ws.name, ws.lifecycle, true, "workspace deleted; snapshots taken from it are kept");
        } finally {
            ws.lock.unlock();
        }
    }

    private void destroyAndDelete(Workspace ws) {
        ws.forgetProcesses();
        ws.egress.forget();
        if (ws.sandbox != null) ws.sandbox.destroy();
        ws.sandbox = null;
        ws.state = WorkspaceState.CLOSED;
        workspaces.remove(ws.id);
        ws.driver.cleanupRuntime(ws.runtimeDir);
        deleteQuietly(ws.runtimeDir);
        deleteQuietly(ws.dir);
    }

    // ---------------------------------------------------------------- queries

    public List<WorkspaceInfo> list(Tenant tenant) {
        return workspaces.values().stream().filter(w -> w.tenant.equals(tenant.id())).map(Workspace::info)
                .sorted(java.util.Comparator.comparing(WorkspaceInfo::createdAt)).toList();
    }

    public WorkspaceInfo info(Tenant tenant, String ref) throws EngineException {
        return resolve(tenant, ref).info();
    }

    /** Drivers with their availability, for {@code berth doctor}. */
    public Map<String, dev.berth.engine.spi.Availability> driverReport() {
        Map<String, dev.berth.engine.spi.Availability> m = new LinkedHashMap<>();
        for (IsolationDriver d : drivers.values()) m.put(d.name(), d.probe());
        return m;
    }

    /** Name of the driver a workspace gets when open_workspace names none. */
    public String defaultIsolation() throws EngineException {
        return chooseDriver(null, null).name();
    }

    public Path home() { return store.home; }

    /** Streams for the low-level agent, for tools that need more than run (file access). */
    public Sandbox sandboxFor(Tenant tenant, String ref) throws EngineException {
        Workspace ws = resolve(tenant, ref);
        ws.lock.lock();
        try {
            WorkspaceAction.check(WorkspaceAction.FILES, ws.state, ws.label());
            ensureRunning(tenant, ws);
            ws.lastUsedAt = Instant.now();
            return ws.sandbox;
        } finally {
            ws.lock.unlock();
        }
    }

    Workspace resolve(Tenant tenant, String ref) throws EngineException {
        if (ref == null || ref.isBlank()) {
            throw new EngineException(Kind.INVALID_ARGUMENT, "workspace is required: give the id or the name that open_workspace returned");
        }
        Workspace ws = workspaces.get(ref);
        if (ws != null && ws.tenant.equals(tenant.id())) return ws;
        return byName(tenant, ref).orElseThrow(() -> new EngineException(Kind.NOT_FOUND, "no workspace '" + ref
                + "'; list_workspaces shows the open ones, open_workspace creates one"));
    }

    private Optional<Workspace> byName(Tenant tenant, String name) {
        return workspaces.values().stream()
                .filter(w -> name.equals(w.name) && w.tenant.equals(tenant.id()) && w.state != WorkspaceState.CLOSED).findFirst();
    }

    /** Refuses a new workspace that would take the tenant over one of its quotas, naming the quota and the numbers. */
    private void checkQuota(Tenant tenant, Resources r, boolean newWorkspace) throws EngineException {
        Tenant.Quota q = tenant.quota();
        List<Workspace> mine = workspaces.values().stream()
                .filter(w -> w.tenant.equals(tenant.id()) && w.state != WorkspaceState.CLOSED).toList();
        List<Workspace> running = mine.stream().filter(w -> w.state != WorkspaceState.PARKED).toList();
        int vcpus = running.stream().mapToInt(w -> w.resources.vcpus()).sum();
        int mem = running.stream().mapToInt(w -> w.resources.memoryMiB()).sum();
        long disk = mine.stream().mapToLong(w -> w.resources.diskMiB()).sum();
        String over = null;
        if (newWorkspace && mine.size() + 1 > q.workspaces()) over = "workspaces: " + mine.size() + " open, limit " + q.workspaces();
        else if (vcpus + r.vcpus() > q.vcpus()) over = "vcpus: " + vcpus + " in use + " + r.vcpus() + " asked, limit " + q.vcpus();
        else if (mem + r.memoryMiB() > q.memoryMiB()) over = "memory: " + mem + " MiB in use + " + r.memoryMiB() + " asked, limit " + q.memoryMiB() + " MiB";
        else if (newWorkspace && disk + r.diskMiB() > q.diskMiB()) over = "disk: " + disk + " MiB allotted + " + r.diskMiB() + " asked, limit " + q.diskMiB() + " MiB";
        if (over != null) {
            throw new EngineException(Kind.LIMIT, "quota of tenant '" + tenant.id() + "' exceeded (" + over
                    + "); park or close a workspace, or ask for smaller resources");
        }
    }

    private IsolationDriver chooseDriver(String wanted, Store.SnapshotRecord snap) throws EngineException {
        if (snap != null && wanted != null && !wanted.equals(snap.isolation())) {
            throw new EngineException(Kind.CONFLICT, "snapshot '" + snap.name() + "' was taken with isolation '"
                    + snap.isolation() + "'; a fork uses the same isolation, so omit isolation or pass '" + snap.isolation() + "'");
        }
        if (snap != null) wanted = snap.isolation();
        if (wanted == null) wanted = config.defaultIsolation();
        IsolationDriver d;
        if (wanted == null) {
            d = drivers.values().stream().filter(x -> x.probe().available()).findFirst().orElseThrow(() ->
                    new EngineException(Kind.UNAVAILABLE, "no isolation driver can run on this machine; `berth doctor` says why"));
        } else {
            d = drivers.get(wanted);
            if (d == null) {
                throw new EngineException(Kind.INVALID_ARGUMENT, "isolation '" + wanted + "' is not one of " + drivers.keySet());
            }
            var a = d.probe();
            if (!a.available()) {
                throw new EngineException(Kind.UNAVAILABLE, "isolation '" + wanted + "' cannot run here: " + a.reason());
            }
        }
        if (config.requiredIsolation() != null && !config.requiredIsolation().equals(d.name())) {
            throw new EngineException(Kind.UNAVAILABLE, "policy requires isolation '" + config.requiredIsolation()
                    + "' and refuses '" + d.name() + "'; a weaker level is never substituted");
        }
        return d;
    }

    /** The operator's ceiling narrowed by what was asked for (null = the whole ceiling). */
    private Policy egressPolicy(List<String> requested) throws EngineException {
        Policy ceiling = config.egress() == null ? Policy.denyAll() : config.egress().ceiling();
        return requested == null ? ceiling : ceiling.narrow(parsePolicy(requested));
    }

    private static Policy parsePolicy(List<String> entries) throws EngineException {
        try {
            return Policy.of(entries);
        } catch (IllegalArgumentException e) {
            throw new EngineException(Kind.INVALID_ARGUMENT, "egress: " + e.getMessage());
        }
    }

    private static Resources validate(Resources r) throws EngineException {
        if (r.vcpus() < 1 || r.vcpus() > 16) throw new EngineException(Kind.INVALID_ARGUMENT, "vcpus " + r.vcpus() + " is outside 1..16");
        if (r.memoryMiB() < 128 || r.memoryMiB() > 16384) throw new EngineException(Kind.INVALID_ARGUMENT, "memory_mib " + r.memoryMiB() + " is outside 128..16384");
        if (r.diskMiB() < 64 || r.diskMiB() > 262144) throw new EngineException(Kind.INVALID_ARGUMENT, "disk_mib " + r.diskMiB() + " is outside 64..262144");
        if (r.maxPids() < 16 || r.maxPids() > 65536) throw new EngineException(Kind.INVALID_ARGUMENT, "max_pids " + r.maxPids() + " is outside 16..65536");
        return r;
    }

    /** Wires a freshly started sandbox: its egress tunnels, and the proxy's CA when the workspace has secrets. */
    private void connect(Workspace ws) throws EngineException {
        ws.sandbox.agent().setTunnelHandler(ws.egress);
        if (!ws.secrets.isEmpty() && config.egress() != null) {
            TrustBundle.install(ws.sandbox.agent(), config.egress().proxy().caCertificatePem());
        }
    }

    private static List<String> secretsOrNone(List<String> names) {
        return names == null ? List.of() : names;
    }

    /** The secret bindings configured on this server (by name), empty without egress. */
    private java.util.Map<String, dev.berth.proxy.SecretBinding> bindings() {
        return config.egress() == null ? java.util.Map.of() : config.egress().secrets();
    }

    /** Validates the bindings asked for at open: each must be configured and granted to the tenant. */
    private List<String> checkSecrets(Tenant tenant, List<String> requested) throws EngineException {
        if (requested == null || requested.isEmpty()) return List.of();
        var configured = bindings();
        List<String> available = configured.keySet().stream().filter(tenant::maySecret).sorted().toList();
        java.util.LinkedHashSet<String> out = new java.util.LinkedHashSet<>();
        for (String n : requested) {
            if (n == null || !configured.containsKey(n) || !tenant.maySecret(n)) {
                throw new EngineException(Kind.INVALID_ARGUMENT, "no secret binding '" + n + "' is available to you; "
                        + (available.isEmpty() ? "the operator has bound none for you (operator config: egress.secrets"
                        + " and the tenant's secrets)" : "available: " + String.join(", ", available)));
            }
            out.add(n);
        }
        return List.copyOf(out);
    }

    /** One run's placeholders (or none), and what it reports at the end. */
    private record Credentials(dev.berth.proxy.CredentialGrant grant, Runner.Injected injected, String skipped) {
        void revoke() {
            if (grant != null) grant.close();
        }

        List<SecretUse> used() {
            if (grant == null) return List.of();
            return grant.uses().stream().map(u -> new SecretUse(u.binding(), u.host(), u.count())).toList();
        }

        String note() {
            List<SecretUse> u = used();
            String said = u.isEmpty() ? null : "the egress proxy injected " + u.stream()
                    .map(x -> "secret '" + x.secret() + "' into " + x.count() + " request(s) to " + x.host())
                    .reduce((a, b) -> a + ", " + b).orElse("");
            if (skipped == null) return said;
            return said == null ? skipped : said + "; " + skipped;
        }
    }

    /**
     * Mints this run's placeholders: the workspace's bindings, narrowed by the run's {@code secrets} (null = all), less
     * any the operator has since removed or withdrawn from the tenant (said in the note, never an error).
     */
    private Credentials credentials(Tenant tenant, Workspace ws, String runId, List<String> narrowing) throws EngineException {
        if (narrowing != null) {
            for (String n : narrowing) {
                if (!ws.secrets.contains(n)) {
                    throw new EngineException(Kind.INVALID_ARGUMENT, "secret '" + n + "' is not bound to workspace '" + ws.label()
                            + "'" + (ws.secrets.isEmpty() ? " (it has none; ask for them with open_workspace {secrets})"
                            : "; its secrets are " + String.join(", ", ws.secrets)) + ". A run can only narrow them");
                }
            }
        }
        boolean trust = !ws.secrets.isEmpty() && config.egress() != null;
        java.util.Map<String, String> defaults = trust ? TrustBundle.environment() : java.util.Map.of();
        var configured = bindings();
        List<String> names = new ArrayList<>();
        List<String> gone = new ArrayList<>();
        for (String n : narrowing == null ? ws.secrets : narrowing) {
            if (configured.containsKey(n) && tenant.maySecret(n)) names.add(n); else gone.add(n);
        }
        String skipped = gone.isEmpty() ? null : "secret binding(s) " + String.join(", ", gone)
                + " are no longer configured for you, so this run went without them";
        dev.berth.proxy.CredentialGrant grant = ws.egress.mint(runId, names); // null: nothing to mint, or no proxy
        if (grant == null) return new Credentials(null, new Runner.Injected(defaults, java.util.Map.of(), java.util.Map.of()), skipped);
        java.util.Map<String, String> byEnv = new java.util.HashMap<>();
        for (String n : names) byEnv.put(configured.get(n).env(), n);
        return new Credentials(grant, new Runner.Injected(defaults, grant.environment(), byEnv), skipped);
    }

    private StartRequest startRequest(Workspace ws, StartRequest.Mode mode) throws IOException {
        Files.createDirectories(ws.runtimeDir);
        Store.traverseOnly(ws.runtimeDir);
        Store.traverseOnly(ws.dir);
        return new StartRequest(ws.id, ws.stateDir(), ws.runtimeDir, mode, ws.resources, Runner.PROXY_PORT);
    }

    private static String newId(String prefix) {
        byte[] b = new byte[5];
        RANDOM.nextBytes(b);
        return prefix + HexFormat.of().formatHex(b);
    }

    private void ensureOpen() throws EngineException {
        if (closed) throw new EngineException(Kind.UNAVAILABLE, "the engine is shutting down");
    }

    private static void deleteQuietly(Path p) {
        try {
            Store.deleteTree(p);
        } catch (IOException e) {
            LOG.log(System.Logger.Level.WARNING, "could not delete " + p + ": " + e.getMessage());
        }
    }

    // ---------------------------------------------------------------- idle and shutdown

    private void reapIdle() {
        Instant now = Instant.now();
        for (Workspace ws : List.copyOf(workspaces.values())) {
            long limit = ws.lifecycle == Lifecycle.PERSISTENT ? config.idleParkSeconds() : config.idleCloseSeconds();
            if (limit <= 0 || ws.lastUsedAt.plusSeconds(limit).isAfter(now)) continue;
            if (!ws.lock.tryLock()) continue;
            try {
                if (ws.activeRuns > 0 || ws.state != WorkspaceState.RUNNING) continue;
                if (ws.lifecycle == Lifecycle.PERSISTENT) {
                    doPark(ws);
                    LOG.log(System.Logger.Level.INFO, "parked idle workspace " + ws.label());
                } else {
                    destroyAndDelete(ws);
                    LOG.log(System.Logger.Level.INFO, "closed idle ephemeral workspace " + ws.label());
                }
            } catch (EngineException e) {
                LOG.log(System.Logger.Level.WARNING, e.getMessage());
            } finally {
                ws.lock.unlock();
            }
        }
    }

    /**
     * Shuts down: ephemeral workspaces are deleted, running persistent ones are parked (memory kept where the
     * driver can), so the next server finds them as they were.
     */
    @Override
    public synchronized void close() {
        // synchronized: a second caller (a shutdown hook racing the stdin-EOF path) must wait until the workspaces
        // are parked, or the JVM would halt half-way through saving them
        if (closed) return;
        closed = true;
        idleReaper.shutdownNow();
        try {
            closeWorkspacesForShutdown();
        } finally {
            if (config.egress() != null) config.egress().proxy().close(); // the engine owns the proxy it was given
        }
    }

    /**
     * Parks or deletes every workspace, all at once: clients give a server a few seconds between closing its stdin
     * and killing it (the MCP TypeScript SDK: 2 s, then SIGTERM, then SIGKILL 2 s later).
     */
    private void closeWorkspacesForShutdown() {
        List<Thread> threads = new ArrayList<>();
        for (Workspace ws : List.copyOf(workspaces.values())) {
            threads.add(Thread.ofVirtual().name("berth-shutdown-" + ws.id).start(() -> {
                ws.lock.lock();
                try {
                    if (ws.lifecycle == Lifecycle.EPHEMERAL) {
                        destroyAndDelete(ws);
                    } else if (ws.state == WorkspaceState.RUNNING && ws.sandbox != null) {
                        doPark(ws);
                    }
                } catch (EngineException | RuntimeException e) {
                    LOG.log(System.Logger.Level.WARNING, "shutdown of " + ws.id + ": " + e.getMessage());
                } finally {
                    ws.lock.unlock();
                }
            }));
        }
        for (Thread t : threads) {
            try {
                t.join(java.time.Duration.ofSeconds(60));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }
}
