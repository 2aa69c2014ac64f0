package dev.berth.engine.lifecycle;

import dev.berth.engine.api.CloseResult;
import dev.berth.engine.api.EngineConfig;
import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.EngineException.Kind;
import dev.berth.engine.api.ImageRef;
import dev.berth.engine.api.Lifecycle;
import dev.berth.engine.api.OpenRequest;
import dev.berth.engine.api.OpenResult;
import dev.berth.engine.api.ParkResult;
import dev.berth.engine.api.Tenant;
import dev.berth.engine.api.WorkspaceState;
import dev.berth.engine.egress.EgressPolicies;
import dev.berth.engine.egress.WorkspaceEgress;
import dev.berth.engine.evidence.EngineEvidence;
import dev.berth.engine.run.ProcessHandover;
import dev.berth.engine.run.RunCredentials;
import dev.berth.engine.run.Runner;
import dev.berth.engine.run.TrustBundle;
import dev.berth.engine.spi.IsolationDriver;
import dev.berth.engine.spi.IsolationLevel;
import dev.berth.engine.spi.Resources;
import dev.berth.engine.spi.Sandbox;
import dev.berth.engine.spi.SandboxDamagedException;
import dev.berth.engine.spi.SandboxException;
import dev.berth.engine.spi.SandboxStillRunningException;
import dev.berth.engine.spi.StartRequest;
import dev.berth.engine.template.ForkMany;
import dev.berth.engine.template.Snapshots;
import dev.berth.engine.template.WarmPool;
import dev.berth.engine.workspace.DriverSelector;
import dev.berth.engine.workspace.Ids;
import dev.berth.engine.workspace.Store;
import dev.berth.engine.workspace.Transitions;
import dev.berth.engine.workspace.Transitions.Step;
import dev.berth.engine.workspace.Workspace;
import dev.berth.engine.workspace.WorkspaceAction;
import dev.berth.engine.workspace.WorkspaceRegistry;
import dev.berth.proxy.policy.Policy;
import java.io.IOException;
import java.nio.file.Files;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;

/**
 * Moves workspaces through their lifecycle with real sandboxes: create (fresh or forked), reopen, resume, park,
 * close. Every state change goes through {@link Workspace#move}; every transition holds the workspace's lock for its
 * whole duration and persists the record before it returns. Thread-safe.
 */
public final class WorkspaceLifecycle implements ForkMany.Opener {
    /** Every sandbox this engine starts is started there (see {@link SandboxStarter}); closed by {@link #shutdown}'s caller. */
    public final SandboxStarter starter = new SandboxStarter();
    private static final System.Logger LOG = System.getLogger("berth.engine");

    private final EngineConfig config;
    private final Store store;
    private final WorkspaceRegistry registry;
    private final DriverSelector drivers;
    private final Snapshots snapshots;
    private final RunCredentials credentials;

    private final EngineEvidence evidence;
    private final dev.berth.engine.image.ImageStore images;
    private final WorkspaceImages workspaceImages;
    private final WarmPool pool;
    /**
     * Set once the stop begins: no workspace is created or resumed after it, or a call admitted just before the stop
     * would start a sandbox (and mount its disk) behind the stop's back, left mounted when the process exits.
     */
    private volatile boolean stopping;

    public WorkspaceLifecycle(EngineConfig config, Store store, WorkspaceRegistry registry, DriverSelector drivers,
                       Snapshots snapshots, RunCredentials credentials, EngineEvidence evidence,
                       dev.berth.engine.image.ImageStore images, WarmPool pool) {
        this.pool = pool;
        this.evidence = evidence;
        this.images = images;
        this.workspaceImages = new WorkspaceImages(images);
        this.config = config;
        this.store = store;
        this.registry = registry;
        this.drivers = drivers;
        this.snapshots = snapshots;
        this.credentials = credentials;
    }

    // ---------------------------------------------------------------- open

    @Override
    public OpenResult open(Tenant tenant, OpenRequest req) throws EngineException {
        return open(tenant, req, null);
    }

    /** @param buildRoot a recipe build's writable root on the namespace level (see {@link Engine#openToBuild}), or null */
    public OpenResult open(Tenant tenant, OpenRequest req, java.nio.file.Path buildRoot) throws EngineException {
        long t0 = System.nanoTime();
        String name = req.name();
        WorkspaceRegistry.checkName("workspace", name);
        String lc = req.lifecycle() == null ? "auto" : req.lifecycle();
        Lifecycle lifecycle = lc.equals("auto") ? (name != null ? Lifecycle.PERSISTENT : Lifecycle.EPHEMERAL) : Lifecycle.parse(lc);
        Store.SnapshotRecord snap = req.fromSnapshot() == null ? null : snapshots.find(tenant, req.fromSnapshot());
        IsolationDriver driver = drivers.choose(req.isolation(), snap == null ? null : snap.isolation(), snap == null ? null : snap.name());
        if (buildRoot != null && (!IsolationLevel.of(driver).buildsImages() || snap != null || name != null || req.image() == null)) {
            throw new EngineException(Kind.INVALID_ARGUMENT, "an image build runs in a new unnamed namespace workspace on its base"
                    + " image (asked: isolation " + driver.name() + ", image " + req.image() + ")");
        }
        Resources resources = DriverSelector.validate(tenant, req.resources());
        Policy egressPolicy = EgressPolicies.forWorkspace(config, req.egress());
        List<String> secrets = credentials.checkOpen(tenant, req.secrets());

        Workspace ws;
        WarmPool.Member member;
        WorkspaceImages.Choice image = null;
        synchronized (registry.namesLock) {
            refuseWhenStopping();
            if (name != null) {
                Optional<Workspace> existing = registry.byName(tenant, name);
                if (existing.isPresent()) return reopen(tenant, existing.get(), req, lifecycle, driver);
            }
            if (snap != null && !Files.isDirectory(store.snapshotDir(snap.id()))) {
                // deleted between the look-up and now (delete renames under this lock, so it is gone or whole)
                throw new EngineException(Kind.NOT_FOUND, "snapshot '" + snap.name() + "' was deleted while this workspace"
                        + " was being opened; nothing was created. Take a new snapshot to fork from");
            }
            long live = registry.live();
            if (live >= config.maxWorkspaces()) {
                throw new EngineException(Kind.LIMIT, "cannot open another workspace: " + live + " are open (limit "
                        + config.maxWorkspaces() + "); close or park one you no longer need");
            }
            registry.checkQuota(tenant, resources, true);
            image = workspaceImages.choose(tenant, req, snap, driver);
            // a fresh workspace on the built-in image without credentials (whose sandbox gets nothing of its own at
            // start) may take a sandbox the warm pool started; it becomes this workspace and never goes back
            member = pool != null && snap == null && image == null && secrets.isEmpty() ? pool.claim(driver, resources) : null;
            String id = member != null ? member.id() : Ids.next("ws-");
            ws = new Workspace(id, tenant.id(), name, lifecycle, driver, config.clock().instant(), snap == null ? null : snap.id(), resources,
                    store.workspaceDir(id), store.runtimeDir(id), WorkspaceState.CREATING,
                    req.egress() == null ? null : List.copyOf(req.egress()),
                    new WorkspaceEgress(config.egress(), id, egressPolicy, secrets, tenant.id()), secrets, config.lifecycleOf(tenant.id()), config.clock());
            if (image != null) ws.useImage(image.ref(), image.record(), buildRoot);
            if (member != null) ws.claimedFromPool();
            ws.lock.lock();
            registry.add(ws);
        }
        boolean admitted = false;
        try {
            // the fleet's names and quotas (issue 27), outside the names lock: its refusal undoes this open below
            registry.admission().admit(tenant, ws.id, name, driver.name(), resources);
            admitted = true;
            Files.createDirectories(ws.stateDir());
            StartRequest.Mode mode = snap == null ? new StartRequest.Fresh()
                    : new StartRequest.Fork(store.snapshotDir(snap.id()).resolve("state"));
            ws.attachSandbox(member != null ? member.sandbox() : starter.start(driver, startRequest(ws, mode)));
            connect(ws);
            java.util.Map<String, Object> extra = new java.util.LinkedHashMap<>();
            if (snap != null) {
                extra.put("from_snapshot", snap.id());
                extra.put("snapshot_name", snap.name());
            }
            extra.put("egress_policy_digest", EngineEvidence.policyDigest(egressPolicy));
            if (!secrets.isEmpty()) extra.put("secrets", secrets);
            if (ws.image() != null) {
                extra.put("image", ws.image().name());
                extra.put("image_digest", ws.image().digest());
            }
            // recorded before the workspace counts as running: if the record cannot be made, the open fails and is undone
            evidence.lifecycle(ws, snap == null ? "open" : "fork", extra, t0);
            ws.move(Step.STARTED);
            store.save(ws);
            String note = snap == null ? "new " + lifecycle.wireName() + " workspace"
                    : "forked from snapshot '" + snap.name() + "' (" + (snap.memoryKept() ? "files and memory" : "files") + ")";
            return new OpenResult(ws.info(), true, false, note, pool == null || snap != null ? null : member != null ? "hit" : "miss");
        } catch (SandboxException | IOException | EngineException e) {
            evidence.failed(snap == null ? "open" : "fork", driver.name(), t0);
            registry.remove(ws);
            ws.move(Step.START_FAILED);
            ws.destroySandbox();
            ws.driver.cleanupRuntime(ws.runtimeDir);
            Store.deleteQuietly(ws.dir);
            Store.deleteQuietly(ws.runtimeDir);
            if (!admitted && e instanceof EngineException refused) throw refused;
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
        if (req.image() != null && (ws.image() == null || !ws.image().name().equals(req.image()))) {
            throw new EngineException(Kind.CONFLICT, "workspace '" + ws.name + "' exists on image '"
                    + (ws.image() == null ? ImageRef.BUILT_IN : ws.image().name()) + "'; omit image to reopen it, or pick another name");
        }
        if (req.secrets() != null && !new HashSet<>(req.secrets()).equals(new HashSet<>(ws.secrets))) {
            throw new EngineException(Kind.CONFLICT, "workspace '" + ws.name + "' exists with secrets " + ws.secrets
                    + "; omit secrets to reopen it, or pick another name");
        }
        ws.lock.lock();
        try {
            ws.admit(WorkspaceAction.RUN);
            boolean resumed = ensureRunning(tenant, ws);
            if (!resumed) evidence.lifecycle(ws, "reopen", java.util.Map.of(), 0);
            return new OpenResult(ws.info(), false, resumed, resumed
                    ? "reopened and resumed the parked workspace" : "reopened the running workspace");
        } finally {
            ws.lock.unlock();
        }
    }

    // ---------------------------------------------------------------- resume

    /**
     * Starts the sandbox of a parked workspace, or of a running one whose sandbox died. Returns whether it started
     * one. Caller holds the lock and has admitted its action.
     */
    public boolean ensureRunning(Tenant tenant, Workspace ws) throws EngineException {
        if (ws.state() == WorkspaceState.RUNNING && ws.sandboxLive()) return false;
        if (ws.state() == WorkspaceState.RUNNING && ws.sandbox() != null) {
            LOG.log(System.Logger.Level.WARNING, "sandbox of " + ws.id + " had stopped; restarting it");
            ws.lost(ws.driver.capabilities().parkKeepsMemory()
                    ? "cold boot, memory lost: the workspace's " + ws.driver.name() + " sandbox had stopped (its process"
                      + " ended outside Berth); files on its disk are kept, memory and processes are not"
                    : "the workspace's sandbox had stopped: files kept, its processes ended");
            ws.forgetProcesses();
            ws.destroySandbox();
        }
        refuseWhenStopping();
        if (ws.state() == WorkspaceState.PARKED) registry.checkQuota(tenant, ws.resources, false);
        long t0 = System.nanoTime();
        ws.move(Step.RESUME);
        try {
            ws.attachSandbox(starter.start(ws.driver, startRequest(ws, new StartRequest.Resume())));
            connect(ws);
            ProcessHandover.reattachAll(ws); // background processes frozen with its memory go on under the same ids
            evidence.lifecycle(ws, "resume", java.util.Map.of(), t0); // before it counts as running, as for open
            ws.move(Step.RESUMED);
            ws.touch();
            store.save(ws);
            return true;
        } catch (SandboxDamagedException e) {
            evidence.failed("resume", ws.driver.name(), t0);
            ws.markDamaged("damaged: its saved state failed verification (" + e.getMessage() + "); nothing was resumed");
            try {
                store.save(ws);
            } catch (IOException io) {
                LOG.log(System.Logger.Level.WARNING, "could not record that " + ws.id + " is damaged: " + io.getMessage());
            }
            throw new EngineException(Kind.ILLEGAL_STATE, "cannot resume workspace '" + ws.label() + "': its saved state"
                    + " failed verification: " + e.getMessage() + ". Nothing was resumed and nothing was changed; the"
                    + " workspace is marked damaged. Close it with delete: true, or ask the operator to inspect "
                    + ws.stateDir(), e);
        } catch (SandboxException | IOException | EngineException e) {
            evidence.failed("resume", ws.driver.name(), t0);
            ws.destroySandbox();
            ws.move(Step.RESUME_FAILED);
            throw new EngineException(Kind.UNAVAILABLE, "could not resume workspace '" + ws.label() + "': "
                    + e.getMessage() + "; its files are kept, try again or run `berth doctor`", e);
        }
    }

    // ---------------------------------------------------------------- park

    public ParkResult park(Workspace ws) throws EngineException {
        ws.lock.lock();
        try {
            if (ws.admit(WorkspaceAction.PARK) == Transitions.Effect.ALREADY_DONE) {
                return new ParkResult(ws.info(), false, true, Store.treeBytes(ws.stateDir()), 0, "it was parked already");
            }
            if (ws.activeRuns() > 0) {
                throw new EngineException(Kind.CONFLICT, "cannot park workspace '" + ws.label() + "': " + ws.activeRuns()
                        + " run(s) in progress; wait for them to finish (or let their timeout end them) and park again");
            }
            return parkLocked(ws);
        } finally {
            ws.lock.unlock();
        }
    }

    /** Parks a running workspace. Caller holds the lock. */
    ParkResult parkLocked(Workspace ws) throws EngineException {
        long t0 = System.nanoTime();
        ws.move(Step.PARK);
        // a driver that keeps memory keeps the processes: their handles are re-attached on resume
        int handed = ws.driver.capabilities().parkKeepsMemory() ? ProcessHandover.suspendAll(ws) : 0;
        try {
            Sandbox.ParkOutcome out = ws.sandbox().park();
            if (!out.memoryKept()) ws.forgetProcesses();
            ws.releaseSandbox();
            ws.move(Step.PARKED);
            store.save(ws);
            Store.deleteQuietly(ws.runtimeDir);
            // after the fact and never refused: the park has happened (the MCP layer recorded the call before it)
            evidence.lifecycleQuietly(ws, "park", java.util.Map.of("memory_kept", out.memoryKept(), "state_bytes", out.stateBytes()), t0);
            String note = out.memoryKept() ? "files, memory and running processes kept; the next run resumes exactly here"
                    + (handed > 0 ? "; its " + handed + " background process(es) keep their ids and are followed again after resume" : "")
                    : "files kept; running processes were stopped (the " + ws.driver.name()
                    + " driver cannot keep memory); the next run starts the workspace again";
            return new ParkResult(ws.info(), out.memoryKept(), false, out.stateBytes(), out.millis(), note);
        } catch (SandboxStillRunningException e) {
            evidence.failed("park", ws.driver.name(), t0);
            ws.move(Step.PARK_FAILED);
            ProcessHandover.reattachAll(ws); // still running: its processes are tracked as before
            throw new EngineException(Kind.UNAVAILABLE, "parking workspace '" + ws.label() + "' failed: " + e.getMessage()
                    + ". Free disk space on the server (or ask the operator) and park again", e);
        } catch (SandboxException | IOException e) {
            // the sandbox is in an unknown state: stop it, keep the files
            evidence.failed("park", ws.driver.name(), t0);
            ws.forgetProcesses();
            ws.destroySandbox();
            ws.move(Step.PARK_LOST);
            try { store.save(ws); } catch (IOException ignored) { }
            throw new EngineException(Kind.INTERNAL, "parking workspace '" + ws.label() + "' failed: " + e.getMessage()
                    + "; the sandbox was stopped and its files kept", e);
        }
    }

    // ---------------------------------------------------------------- close

    /**
     * Closes a workspace and deletes its files. A persistent workspace is deleted only when {@code delete} is true,
     * so that an agent cannot lose work by calling close where it meant park.
     */
    @Override
    public void discard(Tenant tenant, String workspaceId) throws EngineException {
        close(registry.resolve(tenant, workspaceId), true);
    }

    public CloseResult close(Workspace ws, boolean delete) throws EngineException {
        ws.lock.lock();
        try {
            ws.admit(WorkspaceAction.CLOSE);
            if (ws.lifecycle == Lifecycle.PERSISTENT && !delete) {
                throw new EngineException(Kind.CONFLICT, "workspace '" + ws.label() + "' is persistent: closing deletes"
                        + " its files for good. Use park to keep it, or call close_workspace with delete: true");
            }
            if (ws.activeRuns() > 0) {
                throw new EngineException(Kind.CONFLICT, "cannot close workspace '" + ws.label() + "': " + ws.activeRuns()
                        + " run(s) in progress; wait for them to finish");
            }
            destroyAndDelete(ws);
            return new CloseResult(ws.id, ws.name, ws.lifecycle, true, "workspace deleted; snapshots taken from it are kept");
        } finally {
            ws.lock.unlock();
        }
    }

    /** Stops the sandbox and deletes everything of the workspace. Caller holds the lock. */
    void destroyAndDelete(Workspace ws) {
        long t0 = System.nanoTime();
        ws.forgetProcesses();
        ws.egress.forget();
        ws.destroySandbox();
        ws.move(Step.CLOSE);
        registry.remove(ws);
        ws.driver.cleanupRuntime(ws.runtimeDir);
        ws.driver.release(ws.stateDir());
        Store.deleteQuietly(ws.runtimeDir);
        Store.deleteQuietly(ws.dir);
        evidence.lifecycleQuietly(ws, "close", java.util.Map.of(), t0);
    }

    // ---------------------------------------------------------------- shutdown

    /**
     * Parks every persistent workspace and closes every ephemeral one, all at once and within {@code bound} (see
     * {@link WorkspaceStop}): clients give a server a few seconds between closing its stdin and killing it (the MCP
     * TypeScript SDK: 2 s, then SIGTERM, then SIGKILL 2 s later), and a killed server leaves its mounts.
     */
    public StopReport shutdown(java.time.Duration bound, java.time.Duration grace) {
        synchronized (registry.namesLock) {
            stopping = true; // under the lock open() adds under: every workspace it adds is in the stop's list
        }
        return new WorkspaceStop(this, registry).run(bound, grace);
    }

    private void refuseWhenStopping() throws EngineException {
        if (stopping) throw new EngineException(Kind.UNAVAILABLE, "the engine is shutting down");
    }

    /** The fast path of a second stop signal (see {@link WorkspaceStop#halt}): no parking, sandboxes killed, storage released. */
    public StopReport halt(java.time.Duration bound) {
        stopping = true;
        return WorkspaceStop.halt(registry, bound);
    }

    // ---------------------------------------------------------------- helpers

    /** Wires a freshly started sandbox: its egress tunnels, and the proxy's CA when the proxy intercepts for it. */
    private void connect(Workspace ws) throws EngineException {
        ws.sandbox().agent().setTunnelHandler(ws.egress);
        if (config.egress() != null && (!ws.secrets.isEmpty() || config.egress().proxy().interceptsForEveryWorkspace())) {
            TrustBundle.install(ws.sandbox().agent(), config.egress().proxy().caCertificatePem());
        }
    }

    /**
     * A throwaway, read-only sandbox on a damaged workspace's disk (see {@link StartRequest.Inspect}); the workspace
     * stays damaged and its saved files are not touched. Caller holds the lock and destroys the sandbox after use.
     */
    public Sandbox inspect(Workspace ws) throws EngineException {
        try {
            return starter.start(ws.driver, startRequest(ws, new StartRequest.Inspect()));
        } catch (SandboxException | IOException e) {
            throw new EngineException(Kind.UNAVAILABLE, "cannot read the files of damaged workspace '" + ws.label() + "': "
                    + e.getMessage() + "; its saved files are left as they were for the operator (" + ws.stateDir() + ")", e);
        }
    }

    private StartRequest startRequest(Workspace ws, StartRequest.Mode mode) throws IOException {
        Files.createDirectories(ws.runtimeDir);
        Store.traverseOnly(ws.runtimeDir);
        Store.traverseOnly(ws.dir);
        dev.berth.engine.spi.RootImage root = null;
        if (ws.image() != null) {
            try {
                root = images.rootImage(ws.image().name(), ws.image().digest());
                if (ws.buildRoot() != null) root = new dev.berth.engine.spi.RootImage(root.name(), root.digest(), ws.buildRoot(), root.baseDisk(), null, true);
            } catch (dev.berth.engine.image.ImageException e) {
                throw new IOException(e.getMessage(), e);
            }
        }
        return new StartRequest(ws.id, ws.stateDir(), ws.runtimeDir, mode, ws.resources, Runner.PROXY_PORT, root);
    }
}
