package dev.berth.engine.api;

/**
 * A refused or failed engine operation. The message is meant for the agent: it says what was wrong, includes the
 * offending value, and where possible what to do next. Nothing is changed by a refused operation.
 */
public class EngineException extends Exception {

    /** Broad class of the failure, mapped to tool errors by the MCP layer. */
    public enum Kind { NOT_FOUND, ILLEGAL_STATE, INVALID_ARGUMENT, CONFLICT, UNAVAILABLE, LIMIT, INTERNAL }

    private final Kind kind;

    public EngineException(Kind kind, String message) { super(message); this.kind = kind; }
    public EngineException(Kind kind, String message, Throwable cause) { super(message, cause); this.kind = kind; }

    public Kind kind() { return kind; }
}
