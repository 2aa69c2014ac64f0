package dev.berth.engine.lifecycle;

import dev.berth.engine.api.EngineConfig;
import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.Lifecycle;
import dev.berth.engine.api.Tenant;
import dev.berth.engine.api.WorkspaceState;
import dev.berth.engine.egress.EgressPolicies;
import dev.berth.engine.egress.WorkspaceEgress;
import dev.berth.engine.run.BackgroundProcess;
import dev.berth.engine.run.ProcessHandover;
import dev.berth.engine.run.Runner;
import dev.berth.engine.spi.IsolationDriver;
import dev.berth.engine.spi.Resources;
import dev.berth.engine.spi.SandboxException;
import dev.berth.engine.spi.StartRequest;
import dev.berth.engine.workspace.DriverSelector;
import dev.berth.engine.workspace.RunJournal;
import dev.berth.engine.workspace.Store;
import dev.berth.engine.workspace.Transitions;
import dev.berth.engine.workspace.Workspace;
import dev.berth.engine.workspace.WorkspaceRegistry;
import dev.berth.proxy.policy.Policy;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;

/**
 * What a new owner of a home does with what the previous process left there. Runs once, before the engine serves
 * anything, and only in the process that holds the {@link dev.berth.engine.workspace.HomeLock} (so never under a live owner):
 * <ul>
 * <li>a persistent workspace whose record says it was running is offered to its driver to adopt: a microVM whose
 *     QEMU outlived the server is re-attached (files, memory and processes kept) or, if park had already saved it,
 *     left parked; otherwise it comes back parked and says what it lost ({@link Workspace#recovered});</li>
 * <li>runs that were in flight ({@link RunJournal}) are reported, never repeated;</li>
 * <li>ephemeral workspaces, half-created workspaces and half-written snapshots are deleted;</li>
 * <li>runtime directories of everything not adopted are cleaned through every driver and deleted.</li>
 * </ul>
 */
public final class Recovery {
    private static final System.Logger LOG = System.getLogger("berth.engine");

    private final EngineConfig config;
    private final Store store;
    private final WorkspaceRegistry registry;
    private final DriverSelector drivers;

    public Recovery(EngineConfig config, Store store, WorkspaceRegistry registry, DriverSelector drivers) {
        this.config = config;
        this.store = store;
        this.registry = registry;
        this.drivers = drivers;
    }

    public void run() {
        try {
            for (Path dir : Store.children(store.workspaces)) recoverWorkspace(dir);
            for (Path rt : Store.children(store.run)) {
                Workspace adopted = registry.all().stream().filter(w -> w.runtimeDir.equals(rt) && w.sandbox() != null)
                        .findFirst().orElse(null);
                if (adopted != null) continue;
                for (IsolationDriver d : drivers.all()) d.cleanupRuntime(rt);
                if (!unmountLeftovers(rt)) continue; // never delete through a mount: the workspace's files are behind it
                Store.deleteTree(rt);
            }
            for (Path tmp : hidden(store.snapshots)) Store.deleteTree(tmp);
        } catch (IOException e) {
            LOG.log(System.Logger.Level.WARNING, "recovery of " + store.home + " incomplete: " + e.getMessage());
        }
    }

    /**
     * Unmounts whatever a killed server left mounted under a runtime directory that no driver's clean-up knew of (a
     * nested or a driver's own mount). Returns whether nothing is mounted there any more; what stays is reported.
     */
    static boolean unmountLeftovers(Path runtimeDir) {
        for (Path m : dev.berth.engine.host.DiskImage.mountsUnder(runtimeDir)) {
            LOG.log(System.Logger.Level.INFO, "unmounting " + m + ", left mounted by a server that did not stop cleanly");
            dev.berth.engine.host.DiskImage.unmount(m);
        }
        List<Path> left = dev.berth.engine.host.DiskImage.mountsUnder(runtimeDir);
        if (left.isEmpty()) return true;
        LOG.log(System.Logger.Level.WARNING, "runtime directory " + runtimeDir + " kept: still mounted " + left);
        return false;
    }

    private static List<Path> hidden(Path dir) throws IOException {
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
            // its sandbox (if one outlived the server) is stopped with the runtime directories below
            Store.deleteTree(dir);
            return;
        }
        IsolationDriver driver = drivers.byName(rec.isolation());
        if (driver == null) {
            LOG.log(System.Logger.Level.WARNING, "workspace " + rec.id() + " needs driver '" + rec.isolation()
                    + "', which is not configured; left on disk untouched");
            return;
        }
        String tenant = rec.tenant() == null ? Tenant.LOCAL.id() : rec.tenant();
        Policy policy;
        try {
            policy = EgressPolicies.forWorkspace(config, rec.egress());
        } catch (EngineException e) {
            policy = Policy.denyAll(); // the operator's ceiling changed under it: nothing rather than too much
        }
        List<String> secrets = rec.secrets() == null ? List.of() : rec.secrets();
        WorkspaceState initial = "damaged".equals(rec.state()) ? WorkspaceState.DAMAGED : WorkspaceState.PARKED;
        Workspace ws = new Workspace(rec.id(), tenant, rec.name(), Lifecycle.PERSISTENT, driver, Instant.parse(rec.createdAt()),
                rec.fromSnapshot(), rec.resources() == null ? Resources.DEFAULT : rec.resources(), dir,
                store.runtimeDir(rec.id()), initial, rec.egress(),
                new WorkspaceEgress(config.egress(), rec.id(), policy, secrets, tenant), secrets, config.lifecycleOf(tenant), config.clock());
        ws.restoreLastUsed(Instant.parse(rec.lastUsedAt()));
        if (rec.image() != null) {
            ws.useImage(rec.image(), new dev.berth.engine.image.ImageStore(config.home()).byDigest(rec.image().digest()).orElse(null), null);
        }
        if (initial == WorkspaceState.DAMAGED && rec.damage() != null) ws.lost(rec.damage());
        List<RunJournal.Lost> lost = RunJournal.takeLost(dir);
        registry.add(ws);
        // background processes the last server left in the VM's memory: tracked again, re-attached once it runs
        if (initial != WorkspaceState.DAMAGED && driver.capabilities().parkKeepsMemory()) ProcessHandover.restore(config, ws, rec.processes());
        if (rec.state().equals("running")) adoptOrPark(ws, lost); // it was running when the last server died
        else if (rec.processes() != null && !savedMemory(ws)) {
            forgetRestored(ws, "ended: the workspace's memory was not kept");
            store.save(ws);
        }
    }

    /** A workspace that was running when its server died: take over its sandbox, or keep it parked, saying what was lost. */
    private void adoptOrPark(Workspace ws, List<RunJournal.Lost> lost) throws IOException {
        ws.move(Transitions.Step.RESUME);
        java.util.Optional<dev.berth.engine.spi.Sandbox> sandbox;
        try {
            sandbox = ws.driver.adopt(new StartRequest(ws.id, ws.stateDir(), ws.runtimeDir, new StartRequest.Resume(),
                    ws.resources, Runner.PROXY_PORT));
        } catch (SandboxException e) {
            LOG.log(System.Logger.Level.WARNING, e.getMessage());
            sandbox = java.util.Optional.empty();
        }
        if (sandbox.isPresent()) {
            ws.attachSandbox(sandbox.get());
            ws.sandbox().agent().setTunnelHandler(ws.egress);
            ws.move(Transitions.Step.RESUMED);
            ws.lost("the server stopped while the workspace ran; its " + ws.driver.name()
                    + " sandbox kept running and was taken over: files, memory and processes kept");
            ProcessHandover.reattachAll(ws);
            store.save(ws);
            LOG.log(System.Logger.Level.INFO, "took over the running sandbox of workspace " + ws.label());
        } else {
            ws.move(Transitions.Step.RESUME_FAILED);
            if (!savedMemory(ws)) {
                forgetRestored(ws, "ended: the workspace's memory was lost");
                ws.lost(ws.driver.capabilities().parkKeepsMemory()
                        ? "cold boot, memory lost: the server and the workspace's " + ws.driver.name() + " sandbox stopped"
                          + " while it ran; files written to its disk are kept, memory and running processes are not"
                        : "the server stopped while it ran: files kept, its processes ended");
            }
            store.save(ws);
        }
        for (RunJournal.Lost l : lost) {
            if (tracked(ws, l.id())) continue; // re-attached (or waiting for resume) under the same id
            ws.lost(("background".equals(l.kind()) ? "background process '" + l.id() + "' (" + l.command() + ")"
                    + (ws.sandbox() != null ? " may still run, but its handle and output are gone" : " ended")
                    : "run '" + l.id() + "' (" + l.command() + ") was in flight: it was not repeated and its result is lost"));
        }
    }

    /** Whether a restored background process of this id is still tracked (re-attached, or waiting for resume). */
    private static boolean tracked(Workspace ws, String id) {
        return ws.process(id) != null;
    }

    /** Restored processes that cannot come back: reported lost, not tracked. */
    private static void forgetRestored(Workspace ws, String why) {
        for (BackgroundProcess bp : BackgroundProcess.all(ws)) {
            if (bp.suspended()) bp.lost(why);
        }
        ws.forgetProcesses();
    }

    /** Whether the driver left a complete saved state with memory (park finished before the server died). */
    private static boolean savedMemory(Workspace ws) {
        return ws.driver.capabilities().parkKeepsMemory() && ws.driver.hasSavedMemory(ws.stateDir());
    }
}
