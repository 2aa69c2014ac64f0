package dev.berth.mcp.cli;

/** A command line that parsed but cannot be run as given (a value the parser cannot check); exit status 2. */
final class UsageException extends Exception {
    UsageException(String message) { super(message); }
}
