package dev.berth.engine.workspace;

import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.ImageRef;
import dev.berth.engine.api.Lifecycle;
import dev.berth.engine.api.LifecyclePolicy;
import dev.berth.engine.api.WorkspaceInfo;
import dev.berth.engine.api.WorkspaceState;
import dev.berth.engine.egress.WorkspaceEgress;
import dev.berth.engine.spi.IsolationDriver;
import dev.berth.engine.spi.Resources;
import dev.berth.engine.spi.Sandbox;
import java.nio.file.Path;
import java.time.Instant;
import java.time.InstantSource;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The engine's mutable record of one workspace. Lifecycle fields are guarded by {@link #lock}; a lifecycle
 * transition holds the lock for its whole duration, so other callers wait rather than observe a half-done move.
 * Runs hold the lock only to check the state and count themselves in {@link #activeRuns}.
 *
 * <p>The state changes only through {@link #move}, which asks the table in {@link Transitions}. Every other field
 * is either fixed at construction or changed by a method named for what happened (a sandbox attached, a call
 * started or ended, a run flushed), never assigned from another class.
 *
 * <p>Public for the engine's other packages (lifecycle, runs, templates, evidence, the root's front): what they
 * read is a final field fixed at construction or a method; what they change is a method named for the event.
 * Internal to the engine, not for library users.
 */
public final class Workspace {
    /** Its id ({@code ws-...}), fixed. */
    public final String id;
    /** The id of the tenant that owns it. */
    public final String tenant;
    /** The name it was opened under, unique among its tenant's open workspaces; null when unnamed. */
    public final String name;
    /** Persistent (parked when idle, kept) or ephemeral (closed and deleted when idle or at its TTL). */
    public final Lifecycle lifecycle;
    /** The isolation level it runs on. */
    public final IsolationDriver driver;
    final Instant createdAt;
    /** The snapshot it was forked from, or null. */
    public final String fromSnapshot;
    /** The resources its sandbox was started with. */
    public final Resources resources;
    /** {@code <home>/workspaces/<id>}: workspace.meta, runs.journal and state/. */
    public final Path dir;
    /** {@code <home>/run/<id>}: the driver's runtime files, wiped at start-up. */
    public final Path runtimeDir;
    /** Held by a lifecycle transition for its whole duration, and by callers only to check the state and count in. */
    public final ReentrantLock lock = new ReentrantLock();

    /** Background processes by id; guarded by itself. */
    private final Map<String, TrackedProcess> processes = new LinkedHashMap<>();

    /** The allowlist entries asked for at open (null = the operator's whole ceiling), and the bridge to the proxy. */
    final List<String> egressRequest;
    /** Its bridge to the egress proxy: tunnels bound per run. */
    public final WorkspaceEgress egress;
    /** Names of the operator's secret bindings this workspace's runs get placeholders for (empty: none). */
    public final List<String> secrets;

    /** Runs in flight, on disk, so the server after a crash can say which it lost. */
    public final RunJournal journal;

    /** The operator's lifecycle policy for this workspace's tenant, fixed at open or recovery. */
    final LifecyclePolicy policy;
    /** The engine's clock: activity and the idle and TTL deadlines are measured in it. */
    public final InstantSource clock;

    /**
     * What a fault took from this workspace (a server crash, a lost sandbox, a cold boot), said in words by every
     * result until a run has reported it; null when nothing was lost.
     */
    private volatile String recovered;

    /** Inbound preview connections open right now (the root's {@code Ports}): they count as activity for the idle policy. */
    private final AtomicInteger previewConnections = new AtomicInteger();
    /** The imported image it runs on (null: the driver's built-in image), set at open or recovery, then fixed. */
    private volatile ImageRef image;
    /** That image's record (its config's Env and WorkingDir are every run's defaults); null with the built-in image. */
    private volatile dev.berth.engine.image.ImageRecord imageRecord;
    /** A recipe build's writable root (a scratch copy of its base image), or null; never persisted. */
    private volatile Path buildRoot;

    private volatile WorkspaceState state;
    private Sandbox sandbox;
    private int activeRuns;
    /** Calls into the sandbox so far: with {@code activeRuns}, what tells the guard that nothing came between two runs. */
    private long callsStarted;
    /** The agent-config guard's fingerprint after the last run, while nothing has touched the sandbox since; or null. */
    private GuardMemo guardMemo;

    private record GuardMemo(long call, Sandbox sandbox, Object fingerprint) {}
    private volatile Instant lastUsedAt;
    /** Claimed from the warm pool and no run has ended yet: the pool refills when the first one does. */
    private final AtomicBoolean poolRefillDue = new AtomicBoolean();
    /** The background write-out asked for when the last run ended ({@link Sandbox#flushInBackground}). */
    private volatile CompletableFuture<Void> flushed = CompletableFuture.completedFuture(null);

    /** A workspace that starts creating (open), or is recovered parked or damaged; nothing else. */
    public Workspace(String id, String tenant, String name, Lifecycle lifecycle, IsolationDriver driver, Instant createdAt,
              String fromSnapshot, Resources resources, Path dir, Path runtimeDir, WorkspaceState initial,
              List<String> egressRequest, WorkspaceEgress egress, List<String> secrets, LifecyclePolicy policy,
              InstantSource clock) {
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
        this.policy = policy == null ? LifecyclePolicy.DEFAULT : policy;
        this.clock = clock == null ? InstantSource.system() : clock;
    }

    /** Adds a sentence to what a fault took from this workspace. */
    public void lost(String what) {
        recovered = recovered == null ? what : recovered + "; " + what;
    }

    /** What a fault took from this workspace, once, and forgets it: the result that says it is the last to. */
    public String takeRecovered() {
        String lost = recovered;
        recovered = null;
        return lost;
    }

    /** What a fault took from this workspace, or null; kept until a run reports it. */
    String recovered() { return recovered; }

    /**
     * Resume found the saved state failed verification: moves to damaged and says why (replacing any earlier
     * sentence, which the damage supersedes). Caller holds the lock.
     */
    public void markDamaged(String why) {
        move(Transitions.Step.DAMAGED);
        sandbox = null;
        recovered = why;
    }

    /** Its state now; changed only by {@link #move}. */
    public WorkspaceState state() { return state; }

    /** The sandbox it runs in, or null while parked, damaged, or between transitions. Caller holds the lock. */
    public Sandbox sandbox() { return sandbox; }

    /** A sandbox was started for, or taken over by, this workspace while it is creating or resuming. Caller holds the lock. */
    public void attachSandbox(Sandbox s) {
        if (state != WorkspaceState.CREATING && state != WorkspaceState.RESUMING) {
            throw new IllegalStateException("workspace '" + label() + "': a sandbox is attached while creating or resuming, not "
                    + state.wireName());
        }
        sandbox = s;
    }

    /** Stops the sandbox, if any, and forgets it (a failed start, a lost sandbox, close). Caller holds the lock. */
    public void destroySandbox() {
        if (sandbox != null) sandbox.destroy();
        sandbox = null;
    }

    /** The sandbox is gone without being destroyed here (it parked itself, or never came up). Caller holds the lock. */
    public void releaseSandbox() {
        sandbox = null;
    }

    /** A caller's work on the sandbox begins (park and close wait for it); returns the sandbox. Caller holds the lock. */
    public Sandbox callStarted() {
        activeRuns++;
        callsStarted++;
        return sandbox;
    }

    /**
     * Taken by a run before the guard's look after it: {@link #rememberGuard} honours the ticket only if no other call
     * was in flight then, none started since, and nothing runs in the background (-1: it will not be honoured).
     */
    public long guardTicket() {
        lock.lock();
        try {
            return activeRuns == 1 && !backgroundAlive() ? callsStarted : -1;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Keeps the guard's fingerprint taken after a run (what the guarded files are now), for the next run to take as
     * its "before" instead of looking again, if nothing but that run touched {@code s} since {@code ticket}.
     */
    public void rememberGuard(long ticket, Sandbox s, Object fingerprint) {
        lock.lock();
        try {
            boolean alone = ticket >= 0 && ticket == callsStarted && activeRuns == 1 && s == sandbox && !backgroundAlive();
            guardMemo = alone ? new GuardMemo(ticket, s, fingerprint) : null;
        } finally {
            lock.unlock();
        }
    }

    /**
     * The fingerprint the last run left ({@link #rememberGuard}), for the calling run on {@code s} to take as its
     * "before": only if this run's call is the one call started since, alone, on the same sandbox, with nothing in the
     * background (so nothing else can have changed the files in between). Forgets it either way; null if not valid.
     */
    public Object recallGuard(Sandbox s) {
        lock.lock();
        try {
            GuardMemo m = guardMemo;
            guardMemo = null;
            return m != null && callsStarted == m.call() + 1 && activeRuns == 1 && s == sandbox && m.sandbox() == s
                    && !backgroundAlive() ? m.fingerprint() : null;
        } finally {
            lock.unlock();
        }
    }

    private boolean backgroundAlive() {
        synchronized (processes) {
            return processes.values().stream().anyMatch(p -> !p.finished());
        }
    }

    /** A caller's work on the sandbox ended: it no longer holds park and close off, and counts as use. Caller holds the lock. */
    public void callEnded() {
        activeRuns--;
        touch();
    }

    /** Runs and file calls in flight. */
    public int activeRuns() { return activeRuns; }

    /** The workspace was used now (a tool call, a preview connection closing). */
    public void touch() {
        lastUsedAt = clock.instant();
    }

    /** The last tool call, as recorded. */
    Instant lastUsedAt() { return lastUsedAt; }

    /** Recovery: the last use as the previous server recorded it. */
    public void restoreLastUsed(Instant at) {
        lastUsedAt = at;
    }

    /** An inbound preview connection opened: it keeps the workspace awake until {@link #previewClosed}. */
    public void previewOpened() {
        previewConnections.incrementAndGet();
    }

    /** An inbound preview connection ended (or never got through). */
    public void previewClosed() {
        previewConnections.decrementAndGet();
    }

    /** Sets the imported image it runs on, once, at open or recovery (null record: the image has left the store). */
    public void useImage(ImageRef ref, dev.berth.engine.image.ImageRecord record, Path buildRoot) {
        if (image != null) throw new IllegalStateException("workspace '" + label() + "' has its image already");
        this.image = ref;
        this.imageRecord = record;
        this.buildRoot = buildRoot;
    }

    /** The imported image it runs on, or null (the driver's built-in image). */
    public ImageRef image() { return image; }

    /** The image's record (its config's Env and WorkingDir are every run's defaults), or null. */
    public dev.berth.engine.image.ImageRecord imageRecord() { return imageRecord; }

    /** A recipe build's writable root, or null. */
    public Path buildRoot() { return buildRoot; }

    /** This workspace took a sandbox from the warm pool; the pool refills when its first run ends. */
    public void claimedFromPool() {
        poolRefillDue.set(true);
    }

    /** True exactly once after {@link #claimedFromPool}: the first run has ended and the pool may refill. */
    public boolean takePoolRefill() {
        return poolRefillDue.compareAndSet(true, false);
    }

    /** A run ended: what it wrote goes to disk now, off every request's path, not in a later snapshot. */
    public void flushAfterRun(Sandbox s) {
        flushed = s.flushInBackground();
    }

    /** Completes when the write-out asked for at the end of the last run has ended. */
    public CompletableFuture<Void> flushed() { return flushed; }

    /** Starts tracking a background process under its id. */
    public void track(TrackedProcess p) {
        synchronized (processes) {
            processes.put(p.id(), p);
        }
    }

    /** The tracked background process of that id, or null. */
    public TrackedProcess process(String id) {
        synchronized (processes) {
            return processes.get(id);
        }
    }

    /**
     * Makes room for one more background process: forgets ended ones while more than half of {@code max} are
     * tracked, then refuses when {@code max} are still tracked.
     */
    public void checkRoomForProcess(int max) throws EngineException {
        synchronized (processes) {
            processes.values().removeIf(p -> p.finished() && processes.size() > max / 2);
            if (processes.size() >= max) {
                throw new EngineException(EngineException.Kind.LIMIT, "workspace '" + label() + "' has " + processes.size()
                        + " background processes (limit " + max + "); stop some with run {process, signal}");
            }
        }
    }

    /** Takes one step of the state machine; the only way this workspace's state changes. Caller holds the lock. */
    public WorkspaceState move(Transitions.Step step) {
        state = Transitions.next(state, step, label());
        return state;
    }

    /** Admits a caller's action in the current state, or refuses it by name. */
    public Transitions.Effect admit(WorkspaceAction action) throws EngineException {
        return Transitions.admit(action, state, label());
    }

    /** The sandbox is up and its agent answers. */
    public boolean sandboxLive() {
        return sandbox != null && sandbox.isAlive() && sandbox.agent().isOpen();
    }

    /** {@code dir/state}: the driver's persistent state (disk layers, parked memory). */
    public Path stateDir() { return dir.resolve("state"); }

    /** Background processes to keep in the record (those a later connection can re-attach); null when none. */
    List<Store.ProcessRecord> processRecords() {
        List<Store.ProcessRecord> out = new java.util.ArrayList<>();
        synchronized (processes) {
            for (TrackedProcess p : processes.values()) {
                Store.ProcessRecord r = p.record();
                if (r != null) out.add(r);
            }
        }
        return out.isEmpty() ? null : out;
    }

    /** The background processes, as a copy. */
    public List<TrackedProcess> processList() {
        synchronized (processes) {
            return new java.util.ArrayList<>(processes.values());
        }
    }

    /** Stops tracking background processes (their agent session ends with the sandbox or with park). */
    public void forgetProcesses() {
        synchronized (processes) {
            for (TrackedProcess p : processes.values()) p.ended();
            processes.clear();
        }
    }

    /**
     * The last moment this workspace was in use: now while a foreground run is in flight or an egress or preview
     * connection is open; otherwise the later of its last tool call and its background processes' last output.
     */
    Instant lastActivity() {
        if (activeRuns > 0 || (egress != null && egress.openConnections() > 0) || previewConnections.get() > 0) return clock.instant();
        Instant t = lastUsedAt;
        synchronized (processes) {
            for (TrackedProcess p : processes.values()) {
                if (p.running() && p.lastOutputAt().isAfter(t)) t = p.lastOutputAt();
            }
        }
        return t;
    }

    /** When the idle policy parks this workspace (persistent and running), or null. */
    public Instant idleParkAt() {
        if (lifecycle != Lifecycle.PERSISTENT || state != WorkspaceState.RUNNING || policy.idleParkSeconds() == 0) return null;
        return lastActivity().plusSeconds(policy.idleParkSeconds());
    }

    /** When the policy closes and deletes this workspace (ephemeral: idle close or its TTL, whichever is first), or null. */
    public Instant expiresAt() {
        if (lifecycle != Lifecycle.EPHEMERAL || state == WorkspaceState.CLOSED) return null;
        Instant idle = policy.idleCloseSeconds() == 0 ? null : lastActivity().plusSeconds(policy.idleCloseSeconds());
        Instant ttl = policy.ttlSeconds() == 0 ? null : createdAt.plusSeconds(policy.ttlSeconds());
        if (idle == null) return ttl;
        if (ttl == null) return idle;
        return idle.isBefore(ttl) ? idle : ttl;
    }

    /** How the agent should refer to it in messages. */
    public String label() { return name != null ? name : id; }

    /** What list_workspaces and open results say of it. */
    public WorkspaceInfo info() {
        Sandbox sb = sandbox;
        java.util.List<dev.berth.engine.spi.Limit> limits = sb != null && !sb.limits().isEmpty() ? sb.limits() : driver.limits(resources);
        return new WorkspaceInfo(id, name, lifecycle, driver.name(), state, driver.capabilities(), createdAt,
                lastUsedAt, fromSnapshot, activeRuns, egress.policy().describe(), secrets, recovered, idleParkAt(), expiresAt(), resources, limits,
                image != null ? image : new ImageRef(ImageRef.BUILT_IN, driver.imageId()));
    }
}
