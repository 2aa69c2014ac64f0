package dev.berth.engine.api;

import java.nio.file.Path;

/**
 * {@link dev.berth.engine.Engine#start} found its home owned by another live Berth process ({@link dev.berth.engine.workspace.HomeLock}). A client of that home
 * can be served through the owner instead (the MCP server attaches to it over the home's socket).
 */
public final class HomeOwnedException extends EngineException {
    private final Path home;
    private final Long ownerPid;

    public HomeOwnedException(Path home, Long ownerPid, String message) {
        super(Kind.CONFLICT, message);
        this.home = home;
        this.ownerPid = ownerPid;
    }

    public Path home() { return home; }

    /** The owner's pid as it wrote it, or null when the lock file names none. */
    public Long ownerPid() { return ownerPid; }
}
