package dev.berth.engine.audit;

/** An audit record could not be made durable; the message names the log, the file and the cause. */
public final class AuditException extends Exception {
    public AuditException(String message, Throwable cause) {
        super(message, cause);
    }

    public AuditException(String message) {
        super(message);
    }
}
