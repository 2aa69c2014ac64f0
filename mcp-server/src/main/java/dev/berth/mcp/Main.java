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
