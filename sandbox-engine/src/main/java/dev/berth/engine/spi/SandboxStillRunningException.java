package dev.berth.engine.spi;

/**
 * An operation on a running sandbox failed before it changed anything (a park whose state could not be written, on a
 * full disk for one): the sandbox is still running exactly as before, and the message says why.
 */
public class SandboxStillRunningException extends SandboxException {
    public SandboxStillRunningException(String message, Throwable cause) { super(message, cause); }
}
