package dev.berth.mcp.cli;

import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;

/** Where an HTTP-serving command ({@code berth http}, {@code berth node}) listens: {@code --bind} and {@code --port}. */
final class ListenOptions {
    @Option(names = "--bind", paramLabel = "ADDR", description = "address to listen on (default: the config's, else 127.0.0.1)")
    String bind;

    @Option(names = "--port", paramLabel = "N", description = "port to listen on, 1-65535 (default: the config's, else 8080)")
    String port;

    /** The port given, checked against its range (null when not given). */
    Integer port(CommandSpec spec) {
        return CommonOptions.port(spec, port);
    }
}
