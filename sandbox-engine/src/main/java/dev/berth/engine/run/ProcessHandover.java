package dev.berth.engine.run;

import dev.berth.engine.api.EngineConfig;
import dev.berth.engine.api.EngineException;
import dev.berth.engine.agent.AgentClient;
import dev.berth.engine.agent.ExecHandle;
import dev.berth.engine.egress.EgressPolicies;
import dev.berth.engine.egress.WorkspaceEgress;
import dev.berth.engine.workspace.Store;
import dev.berth.engine.workspace.Workspace;
import java.io.IOException;
import java.util.List;

/**
 * Carries a workspace's background processes from one agent connection to the next where the driver keeps memory:
 * across park/resume of a microVM ({@link #suspendAll} before park, {@link #reattachAll} after resume) and across a
 * server crash or restart (the new server {@link #restore}s them from the workspace record, then re-attaches them
 * when it takes the VM over or resumes it). Re-attaching uses the agent's ATTACH: output produced while no host was
 * attached is delivered first (the agent keeps the newest 256 KiB per process and says how much it dropped), an exit
 * that happened meanwhile is reported, and the process id the caller holds stays the same. Stateless.
 */
public final class ProcessHandover {
    private static final System.Logger LOG = System.getLogger("berth.engine");

    private ProcessHandover() {}

    /**
     * Before the sandbox's connection goes for a park that keeps memory: marks every process that the agent can hand
     * over again, so losing the connection does not end it. Returns how many were marked.
     */
    public static int suspendAll(Workspace ws) {
        AgentClient agent = ws.sandbox() == null ? null : ws.sandbox().agent();
        if (agent == null || !agent.supportsAttach()) return 0;
        int n = 0;
        for (BackgroundProcess bp : BackgroundProcess.all(ws)) {
            if (bp.running() && bp.handle().run() != null) {
                bp.suspend();
                n++;
            }
        }
        return n;
    }

    /**
     * After the workspace's sandbox is up on a new connection (resume, take-over): re-attaches every suspended
     * process. One that the agent no longer knows (a cold boot, or it ended and was forgotten) is over, and the
     * workspace's next result says so. Caller holds the workspace lock.
     */
    public static void reattachAll(Workspace ws) {
        for (BackgroundProcess bp : BackgroundProcess.all(ws)) {
            if (!bp.suspended()) continue;
            if (bp.connected()) {
                bp.resumeInPlace(); // the park did not happen: same connection, nothing to take over
                continue;
            }
            String run = bp.handle().run();
            try {
                ExecHandle h = ws.sandbox().agent().attach(run, bp, bp.tty());
                bp.reattach(h);
                LOG.log(System.Logger.Level.DEBUG, "re-attached background process " + bp.id + " of " + ws.label() + " (run " + run + ")");
            } catch (IOException | RuntimeException e) {
                String why = "it could not be re-attached after the workspace came back (" + e.getMessage()
                        + "): it ended, or the workspace's memory was lost; its output is no longer collected";
                bp.lost(why);
                ws.lost("background process '" + bp.id + "' (" + bp.command + ") " + why);
            }
        }
    }

    /**
     * A new server's view of the processes a previous one started in this workspace (from its record): tracked under
     * the same ids, suspended until {@link #reattachAll}. Their egress is the run's narrowing as asked for; secret
     * placeholders minted for them died with the previous server and are not honoured any more.
     */
    public static void restore(EngineConfig config, Workspace ws, List<Store.ProcessRecord> records) {
        if (records == null) return;
        for (Store.ProcessRecord r : records) {
            if (r == null || r.id() == null || r.run() == null || r.command() == null || r.startedAt() == null) continue;
            BackgroundProcess bp;
            try {
                bp = BackgroundProcess.restored(r, ws.id, ws.clock);
            } catch (RuntimeException e) {
                LOG.log(System.Logger.Level.WARNING, "skipping unreadable process record " + r.id() + " of " + ws.id + ": " + e);
                continue;
            }
            dev.berth.proxy.policy.Policy narrowing = null;
            if (r.egress() != null) {
                try {
                    narrowing = EgressPolicies.parse(config, r.egress());
                } catch (EngineException e) {
                    narrowing = dev.berth.proxy.policy.Policy.denyAll(); // no longer parses: nothing rather than too much
                }
            }
            WorkspaceEgress.RunEgress egress = ws.egress.begin(bp.id, narrowing);
            bp.onChannel = ch -> ws.egress.bind(egress, ch);
            ws.journal.started(bp.id, "background", bp.command);
            bp.onEnd(() -> {
                ws.egress.end(egress);
                ws.journal.ended(bp.id);
            });
            ws.track(bp);
        }
    }

    /** Writes the workspace record again (its process list changed); a failure is logged, never thrown. */
    static void saveQuietly(Store store, Workspace ws) {
        try {
            store.save(ws);
        } catch (IOException | RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "could not record the background processes of " + ws.id + ": " + e.getMessage());
        }
    }
}
