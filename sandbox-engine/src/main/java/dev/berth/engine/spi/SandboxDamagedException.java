package dev.berth.engine.spi;

/**
 * A sandbox's saved state failed verification (a file missing, truncated, or not the one park wrote): the driver
 * refused to resume it, and nothing was started or changed. The message names the file and what differs.
 */
public class SandboxDamagedException extends SandboxException {
    public SandboxDamagedException(String message) { super(message); }
}
