package dev.berth.engine;

import dev.berth.engine.spi.IsolationDriver;
import dev.berth.engine.spi.Resources;
import dev.berth.proxy.Policy;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;

/**
 * What a new engine does with what the previous process left in its home: runtime directories are cleaned through
 * every driver and deleted, ephemeral workspaces deleted, half-created workspaces and half-written snapshots
 * removed, and persistent workspaces registered again as parked. Runs once, before the engine serves anything.
 */
final class Recovery {
    private static final System.Logger LOG = System.getLogger("berth.engine");

    private final EngineConfig config;
    private final Store store;
    private final WorkspaceRegistry registry;
    private final DriverSelector drivers;

    Recovery(EngineConfig config, Store store, WorkspaceRegistry registry, DriverSelector drivers) {
        this.config = config;
        this.store = store;
        this.registry = registry;
        this.drivers = drivers;
    }

    void run() {
        try {
            for (Path rt : Store.children(store.run)) {
                for (IsolationDriver d : drivers.all()) d.cleanupRuntime(rt);
                Store.deleteTree(rt);
            }
            for (Path dir : Store.children(store.workspaces)) recoverWorkspace(dir);
            for (Path tmp : hidden(store.snapshots)) Store.deleteTree(tmp);
        } catch (IOException e) {
            LOG.log(System.Logger.Level.WARNING, "recovery of " + store.home + " incomplete: " + e.getMessage());
        }
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
                new WorkspaceEgress(config.egress(), rec.id(), policy, secrets), secrets);
        ws.lastUsedAt = Instant.parse(rec.lastUsedAt());
        registry.add(ws);
        if (rec.state().equals("running")) store.save(ws); // it was running when the last server died
    }
}
