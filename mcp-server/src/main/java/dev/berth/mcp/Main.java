package dev.berth.mcp;

import dev.berth.engine.spi.IsolationDriver;
import dev.berth.mcp.cli.Backend;
import dev.berth.mcp.cli.Cli;
import dev.berth.mcp.cli.Options;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.List;

/**
 * The {@code berth} program (the jar's main class): the command line ({@link Cli}) over this package's server
 * wiring, which reads the operator config, builds the engine on the drivers ({@link Drivers}) and serves MCP on
 * stdio ({@link ServeStdio}) or HTTP ({@link ServeHttp}), or builds an image from a recipe ({@link BuildImage}), or opens a terminal in a workspace ({@link Shell}).
 */
public final class Main implements Backend {
    private Main() {}

    public static void main(String[] args) throws Exception {
        System.exit(Cli.run(args, new Main()));
    }

    @Override
    public int stdio(Options opts) throws Exception { return ServeStdio.run(opts); }

    @Override
    public int http(Options opts) throws Exception { return ServeHttp.run(opts); }

    @Override
    public int node(Options opts) throws Exception { return ServeHttp.run(opts, true); }

    @Override
    public int fleetStatus(Path config, java.io.PrintWriter out, java.io.PrintWriter err) {
        return withFleet(config, err, (store, keys) -> {
            out.print(dev.berth.fleet.FleetStatus.render(store, keys, java.time.Clock.systemUTC()));
            out.flush();
        });
    }

    @Override
    public int cordon(Path config, String nodeId, boolean on, java.io.PrintWriter out, java.io.PrintWriter err) {
        return withFleet(config, err, (store, keys) -> {
            boolean live = dev.berth.fleet.NodeMembership.cordon(store, keys, nodeId, on);
            out.println("node " + nodeId + (on ? " cordoned: placement skips it; its workspaces stay" : " uncordoned")
                    + (live ? "" : " (not live now; this holds when it joins)"));
            out.flush();
        });
    }

    /** Loads the config, refuses one without a fleet section (2), runs {@code action} on its etcd (1 when etcd fails). */
    private static int withFleet(Path config, java.io.PrintWriter err,
                                 java.util.function.BiConsumer<dev.berth.fleet.FleetStore, dev.berth.fleet.FleetKeys> action) {
        OperatorConfig c;
        try {
            c = OperatorConfig.load(config);
        } catch (OperatorConfig.ConfigException e) {
            err.println("berth: " + e.getMessage());
            return 2;
        }
        if (c.fleet() == null) {
            err.println("berth: " + config + " has no fleet section (etcd endpoints, node_id; docs/operator-config.md)");
            return 2;
        }
        try (var store = new dev.berth.fleet.EtcdStore(c.fleet().etcd())) {
            action.accept(store, new dev.berth.fleet.FleetKeys(c.fleet().prefix()));
            return 0;
        } catch (dev.berth.fleet.FleetStoreException e) {
            err.println("berth: fleet: " + e.getMessage());
            return 1;
        }
    }

    @Override
    public int buildImage(Options opts, Path recipe, String name, int stepTimeoutSeconds, PrintStream out, PrintStream err) {
        return BuildImage.run(opts, recipe, name, stepTimeoutSeconds, out, err);
    }

    @Override
    public int shell(Options opts, String workspace, String command, PrintStream err) { return Shell.run(opts, workspace, command, err); }

    @Override
    public List<IsolationDriver> drivers(Options opts) { return Drivers.all(opts); }

    @Override
    public String versionLine() { return BerthServer.versionLine(); }
}
