package dev.berth.engine.spi;

/** A driver operation failed. The message says what failed and, where possible, what to do next. */
public class SandboxException extends Exception {
    public SandboxException(String message) { super(message); }
    public SandboxException(String message, Throwable cause) { super(message, cause); }
}
