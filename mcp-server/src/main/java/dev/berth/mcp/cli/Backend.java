package dev.berth.mcp.cli;

import dev.berth.engine.spi.IsolationDriver;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.List;

/**
 * What the commands that build an engine or a server ask of the server wiring. {@code dev.berth.mcp.Main} supplies
 * it, so this package parses, checks and reports while the operator config, the drivers and the transports are
 * put together in one place that the commands do not depend on.
 */
public interface Backend {
    /** {@code berth stdio}: serves one client on stdin/stdout until it closes stdin; returns the exit status. */
    int stdio(Options opts) throws Exception;

    /** {@code berth http}: serves until SIGTERM/SIGINT; returns the exit status. */
    int http(Options opts) throws Exception;

    /** {@code berth node}: {@code berth http} as a member of the fleet its config's {@code fleet} section names. */
    int node(Options opts) throws Exception;

    /** {@code berth fleet status}: prints the fleet the config names to {@code out}; returns the exit status. */
    int fleetStatus(Path config, java.io.PrintWriter out, java.io.PrintWriter err);

    /** {@code berth node cordon|uncordon ID}: marks the node in the fleet the config names; returns the exit status. */
    int cordon(Path config, String nodeId, boolean on, java.io.PrintWriter out, java.io.PrintWriter err);

    /** {@code berth image build}: builds {@code recipe} as image {@code name}; returns the exit status. */
    int buildImage(Options opts, Path recipe, String name, int stepTimeoutSeconds, PrintStream out, PrintStream err);

    /**
     * {@code berth shell}: runs {@code command} on a terminal in {@code workspace} (resumed first if parked), wired to
     * this process's terminal until it ends; returns its exit status (1 when refused, with the reason on {@code err}).
     */
    int shell(Options opts, String workspace, String command, PrintStream err);

    /** The isolation drivers this build offers, strongest first. */
    List<IsolationDriver> drivers(Options opts);

    /** What {@code berth version} prints. */
    String versionLine();
}
