package dev.berth.engine.run;

import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.Lifecycle;
import dev.berth.engine.api.OutputListener;
import dev.berth.engine.api.ProcessStatus;
import dev.berth.engine.api.RunRequest;
import dev.berth.engine.api.RunResult;
import dev.berth.engine.api.Tenant;
import dev.berth.engine.api.WorkspaceState;
import dev.berth.engine.audit.AuditLog;
import dev.berth.engine.egress.WorkspaceEgress;
import dev.berth.engine.evidence.EngineEvidence;
import dev.berth.engine.metrics.CallPhases;
import dev.berth.engine.spi.Sandbox;
import dev.berth.engine.workspace.Ids;
import dev.berth.engine.workspace.Store;
import dev.berth.engine.workspace.Workspace;
import dev.berth.proxy.policy.Policy;
import java.time.Instant;

/**
 * The one choreography of a run, foreground or background: evidence that it starts, its credentials minted, its
 * egress begun and its journal entry written; at its end the reverse (journal, egress, credentials revoked and
 * recorded). Foreground runs end when {@link #foreground} returns; background runs when their process ends.
 * Stateless apart from its collaborators; thread-safe. Callers hold the workspace as an active call
 * ({@link Workspace#callStarted}) while they call in.
 */
public final class RunFlow {
    /** Background processes one workspace may track at once. */
    static final int MAX_PROCESSES = 32;

    private final Store store;
    private final Runner runner;
    private final EngineEvidence evidence;
    private final RunCredentials credentials;
    /** Starts a warm-pool replacement for a driver's sandbox; null without a pool. */
    private final java.util.function.Consumer<dev.berth.engine.spi.IsolationDriver> refillPool;

    /**
     * {@code refillPool} starts the replacement of a sandbox claimed from the warm pool (null without a pool): it is
     * called when the claiming workspace's first run ends, so the replacement's start does not compete with it.
     */
    public RunFlow(Store store, Runner runner, EngineEvidence evidence, RunCredentials credentials,
            java.util.function.Consumer<dev.berth.engine.spi.IsolationDriver> refillPool) {
        this.store = store;
        this.runner = runner;
        this.evidence = evidence;
        this.credentials = credentials;
        this.refillPool = refillPool;
    }

    /**
     * What one run holds while it runs: its credentials and egress and its journal entry. Begun in a fixed order
     * (credentials, their evidence, egress, journal); {@link #release} gives them back.
     */
    private record Session(Workspace ws, String id, RunCredentials.Grant creds, WorkspaceEgress.RunEgress egress) {

        static Session begin(RunFlow flow, Tenant tenant, Workspace ws, String id, String kind, RunRequest req,
                             Policy narrowing, EngineEvidence.Written started) throws EngineException {
            RunCredentials.Grant creds = flow.credentials.mint(tenant, ws, id, req.secrets());
            flow.evidence.credentialsMinted(ws, id, creds.bindings(), started);
            CallPhases.mark("credentials.mint");
            WorkspaceEgress.RunEgress egress = ws.egress.begin(id, narrowing);
            CallPhases.mark("egress.begin");
            ws.journal.started(id, kind, req.command());
            CallPhases.mark("journal.start");
            return new Session(ws, id, creds, egress);
        }

        /** Ends its egress and revokes its placeholders (worthless from here on), recording which were used. */
        void release(EngineEvidence evidence) {
            ws.egress.end(egress);
            creds.revoke();
            evidence.credentialsRevoked(ws, id, creds.bindings(), creds.used());
        }
    }

    /** Runs a command to its end and returns its result; the caller has admitted the run and holds the sandbox. */
    public RunResult foreground(Tenant tenant, Workspace ws, Sandbox sandbox, boolean resumed, RunRequest req,
                         OutputListener listener, Policy narrowing) throws EngineException {
        String runId = Ids.next("run-");
        Instant startedAt = Instant.now();
        long t0 = System.nanoTime();
        EngineEvidence.Written started = evidence.runStarting(ws, runId, req);
        CallPhases.mark("audit.run_start.encode");
        Session s = Session.begin(this, tenant, ws, runId, "run", req, narrowing, started);
        Policy effective = narrowing == null ? ws.egress.policy() : ws.egress.policy().narrow(narrowing);
        Runner.Ended ended;
        try {
            ended = runner.execute(ws, sandbox, req, listener, s.creds().injected(), s.egress(), started::join);
        } catch (EngineException e) {
            evidence.runFailed(ws, runId, t0, e);
            throw e;
        } finally {
            ws.journal.ended(runId);
            CallPhases.mark("journal.end");
            // what the run wrote goes to disk now, off every request's path, not in a later snapshot
            ws.flushAfterRun(sandbox);
            if (refillPool != null && ws.takePoolRefill()) refillPool.accept(ws.driver); // its first run ended: start its replacement
            CallPhases.mark("flush.request");
            s.release(evidence);
            CallPhases.mark("egress.end+revoke");
        }
        // the end record's write, its fsync and the receipt's signature run while the guard looks at what the run changed
        EngineEvidence.RunRecord record = evidence.runExited(ws, runId, t0, startedAt, effective, ended.result(), s.creds().used(), resumed, s.egress());
        CallPhases.mark("audit.run.encode");
        RunResult r = runner.checked(ws, sandbox, ended);
        CallPhases.mark("guard.after");
        r = r.withEgressDenied(s.egress().denials());
        r = r.withEgressFiltered(s.egress().filteredMetadata());
        r = r.withSecrets(s.creds().used(), s.creds().note());
        AuditLog.Position findings = evidence.guardFindings(ws, runId, record, r.agentConfigChanges());
        CallPhases.mark("result.assemble");
        String lost = ws.takeRecovered(); // said once, in this result
        if (lost != null) r = r.withRecovered(lost);
        r = r.withLifecycle(ws.idleParkAt(), ws.expiresAt());
        if (resumed) {
            r = r.withResumed("the workspace was parked and was resumed for this run"
                    + (ws.driver.capabilities().parkKeepsMemory() ? "" : " (files kept; processes had stopped)"));
        }
        return evidence.runEnded(ws, runId, record, findings, r);
    }

    /**
     * Starts a command in the background and returns its first status at once. Its credentials and egress live as
     * long as its process: released when it ends or is forgotten.
     */
    public ProcessStatus background(Tenant tenant, Workspace ws, Sandbox sandbox, boolean resumed, RunRequest req,
                             Policy narrowing) throws EngineException {
        ws.checkRoomForProcess(MAX_PROCESSES);
        BackgroundProcess bp = new BackgroundProcess(Ids.next("p-"), ws.id, req.command(), req.egress(), ws.clock);
        bp.useTerminal(req.tty());
        long t0 = System.nanoTime();
        evidence.backgroundStarting(ws, bp.id, req);
        Session s = Session.begin(this, tenant, ws, bp.id, "background", req, narrowing, null); // its narrowing and tunnels
        try {
            bp.attach(runner.start(ws, sandbox, req, bp, s.creds().injected(), s.egress()));
        } catch (EngineException | RuntimeException e) {
            s.release(evidence);
            ws.journal.ended(bp.id);
            if (e instanceof EngineException ee) evidence.runFailed(ws, bp.id, t0, ee);
            throw e;
        }
        bp.onChannel = ch -> ws.egress.bind(s.egress(), ch); // its channel after a re-attach (park, take-over)
        bp.onEnd(() -> {
            s.release(evidence);
            ws.journal.ended(bp.id);
            if (ws.lifecycle == Lifecycle.PERSISTENT && ws.state() != WorkspaceState.CLOSED) ProcessHandover.saveQuietly(store, ws);
        });
        ws.track(bp);
        // a new server re-attaches it from the record after a crash
        if (ws.lifecycle == Lifecycle.PERSISTENT) ProcessHandover.saveQuietly(store, ws);
        return bp.read(0L, 0L, 0, resumed ? "started; the workspace was parked and was resumed first" : "started");
    }
}
