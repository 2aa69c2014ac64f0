package dev.berth.engine;

import dev.berth.engine.spi.IsolationDriver;
import dev.berth.engine.spi.Resources;
import dev.berth.engine.spi.Sandbox;
import java.nio.file.Path;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The engine's mutable record of one workspace. Lifecycle fields are guarded by {@link #lock}; a lifecycle
 * transition holds the lock for its whole duration, so other callers wait rather than observe a half-done move.
 * Runs hold the lock only to check the state and count themselves in {@link #activeRuns}.
 *
 * <p>The state changes only through {@link #move}, which asks the table in {@link Transitions}.
 */
final class Workspace {
    final String id;
    final String tenant;
    final String name;
    final Lifecycle lifecycle;
    final IsolationDriver driver;
    final Instant createdAt;
    final String fromSnapshot;
    final Resources resources;
    final Path dir;        // <home>/workspaces/<id>: workspace.meta and state/
    final Path runtimeDir; // <home>/run/<id>
    final ReentrantLock lock = new ReentrantLock();

    /** Background processes by id; guarded by itself. */
    final Map<String, BackgroundProcess> processes = new LinkedHashMap<>();

    /** The allowlist entries asked for at open (null = the operator's whole ceiling), and the bridge to the proxy. */
    final List<String> egressRequest;
    final WorkspaceEgress egress;
    /** Names of the operator's secret bindings this workspace's runs get placeholders for (empty: none). */
    final List<String> secrets;

    /** Runs in flight, on disk, so the server after a crash can say which it lost. */
    final RunJournal journal;

    /**
     * What a fault took from this workspace (a server crash, a lost sandbox, a cold boot), said in words by every
     * result until a run has reported it; null when nothing was lost.
     */
    volatile String recovered;

    /** The operator's lifecycle policy for this workspace's tenant. */
    volatile LifecyclePolicy policy = LifecyclePolicy.DEFAULT;

    /** Inbound preview connections open right now ({@link Ports}): they count as activity for the idle policy. */
    final java.util.concurrent.atomic.AtomicInteger previewConnections = new java.util.concurrent.atomic.AtomicInteger();
    /** The imported image it runs on (null: the driver's built-in image), set at open or recovery, then fixed. */
    volatile ImageRef image;
    /** That image's record (its config's Env and WorkingDir are every run's defaults); null with the built-in image. */
    volatile dev.berth.engine.image.ImageRecord imageRecord;
    /** A recipe build's writable root (a scratch copy of its base image), or null; never persisted. */
    volatile java.nio.file.Path buildRoot;

    private volatile WorkspaceState state;
    Sandbox sandbox;
    int activeRuns;
    volatile Instant lastUsedAt;
    /** Claimed from the warm pool and no run has ended yet: the pool refills when the first one does. */
    volatile boolean poolRefillDue;
    /** The background write-out asked for when the last run ended ({@link dev.berth.engine.spi.Sandbox#flushInBackground}). */
    volatile java.util.concurrent.CompletableFuture<Void> flushed = java.util.concurrent.CompletableFuture.completedFuture(null);

    Workspace(String id, String tenant, String name, Lifecycle lifecycle, IsolationDriver driver, Instant createdAt,
              String fromSnapshot, Resources resources, Path dir, Path runtimeDir, WorkspaceState initial,
              List<String> egressRequest, WorkspaceEgress egress, List<String> secrets) {
        if (initial != WorkspaceState.CREATING && initial != WorkspaceState.PARKED && initial != WorkspaceState.DAMAGED) {
            throw new IllegalArgumentException("a workspace starts creating, or is recovered parked or damaged, not " + initial);
        }
        this.id = id;
        this.tenant = tenant;
        this.name = name;
        this.lifecycle = lifecycle;
        this.driver = driver;
        this.createdAt = createdAt;
        this.fromSnapshot = fromSnapshot;
        this.resources = resources;
        this.dir = dir;
        this.runtimeDir = runtimeDir;
        this.state = initial;
        this.lastUsedAt = createdAt;
        this.egressRequest = egressRequest;
        this.egress = egress;
        this.secrets = secrets == null ? List.of() : List.copyOf(secrets);
        this.journal = dir == null ? null : new RunJournal(dir);
    }

    /** Adds a sentence to what a fault took from this workspace. */
    void lost(String what) {
        recovered = recovered == null ? what : recovered + "; " + what;
    }

    WorkspaceState state() { return state; }

    /** Takes one step of the state machine; the only way this workspace's state changes. Caller holds the lock. */
    WorkspaceState move(Transitions.Step step) {
        state = Transitions.next(state, step, label());
        return state;
    }

    /** Admits a caller's action in the current state, or refuses it by name. */
    Transitions.Effect admit(WorkspaceAction action) throws EngineException {
        return Transitions.admit(action, state, label());
    }

    /** The sandbox is up and its agent answers. */
    boolean sandboxLive() {
        return sandbox != null && sandbox.isAlive() && sandbox.agent().isOpen();
    }

    Path stateDir() { return dir.resolve("state"); }

    /** Background processes to keep in the record (those a later connection can re-attach); null when none. */
    List<Store.ProcessRecord> processRecords() {
        List<Store.ProcessRecord> out = new java.util.ArrayList<>();
        synchronized (processes) {
            for (BackgroundProcess p : processes.values()) {
                Store.ProcessRecord r = p.record();
                if (r != null) out.add(r);
            }
        }
        return out.isEmpty() ? null : out;
    }

    /** The background processes, as a copy. */
    List<BackgroundProcess> processList() {
        synchronized (processes) {
            return new java.util.ArrayList<>(processes.values());
        }
    }

    /** Stops tracking background processes (their agent session ends with the sandbox or with park). */
    void forgetProcesses() {
        synchronized (processes) {
            for (BackgroundProcess p : processes.values()) p.ended();
            processes.clear();
        }
    }

    /**
     * The last moment this workspace was in use: now while a foreground run is in flight or an egress or preview
     * connection is open; otherwise the later of its last tool call and its background processes' last output.
     */
    Instant lastActivity() {
        if (activeRuns > 0 || (egress != null && egress.openConnections() > 0) || previewConnections.get() > 0) return Instant.now();
        Instant t = lastUsedAt;
        synchronized (processes) {
            for (BackgroundProcess p : processes.values()) {
                if (p.running() && p.lastOutputAt.isAfter(t)) t = p.lastOutputAt;
            }
        }
        return t;
    }

    /** When the idle policy parks this workspace (persistent and running), or null. */
    Instant idleParkAt() {
        if (lifecycle != Lifecycle.PERSISTENT || state != WorkspaceState.RUNNING || policy.idleParkSeconds() == 0) return null;
        return lastActivity().plusSeconds(policy.idleParkSeconds());
    }

    /** When the policy closes and deletes this workspace (ephemeral: idle close or its TTL, whichever is first), or null. */
    Instant expiresAt() {
        if (lifecycle != Lifecycle.EPHEMERAL || state == WorkspaceState.CLOSED) return null;
        Instant idle = policy.idleCloseSeconds() == 0 ? null : lastActivity().plusSeconds(policy.idleCloseSeconds());
        Instant ttl = policy.ttlSeconds() == 0 ? null : createdAt.plusSeconds(policy.ttlSeconds());
        if (idle == null) return ttl;
        if (ttl == null) return idle;
        return idle.isBefore(ttl) ? idle : ttl;
    }

    /** How the agent should refer to it in messages. */
    String label() { return name != null ? name : id; }

    WorkspaceInfo info() {
        Sandbox sb = sandbox;
        java.util.List<dev.berth.engine.spi.Limit> limits = sb != null && !sb.limits().isEmpty() ? sb.limits() : driver.limits(resources);
        return new WorkspaceInfo(id, name, lifecycle, driver.name(), state, driver.capabilities(), createdAt,
                lastUsedAt, fromSnapshot, activeRuns, egress.policy().describe(), secrets, recovered, idleParkAt(), expiresAt(), resources, limits,
                image != null ? image : new ImageRef(ImageRef.BUILT_IN, driver.imageId()));
    }
}
