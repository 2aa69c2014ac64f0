package dev.berth.engine.api;

/** Whether a workspace outlives its session. */
public enum Lifecycle {
    /** Survives park, close of the client and server restarts; deleted only by close_workspace. */
    PERSISTENT,
    /** Fresh per task; deleted on close, on idle, and when the server exits. */
    EPHEMERAL;

    public String wireName() { return name().toLowerCase(java.util.Locale.ROOT); }

    public static Lifecycle parse(String s) throws EngineException {
        for (Lifecycle l : values()) if (l.wireName().equals(s)) return l;
        throw new EngineException(EngineException.Kind.INVALID_ARGUMENT,
                "lifecycle '" + s + "' is not one of persistent, ephemeral, auto");
    }
}
