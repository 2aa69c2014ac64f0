package dev.berth.engine.api;

/** What the engine does when a run changes agent configuration files in a workspace. */
public enum GuardMode {
    /** Not watched. */
    OFF,
    /** Reported in the run result and recorded in the audit log (default). */
    REPORT,
    /** Reported, recorded and undone: agent configuration is read-only to runs. */
    REVERT;

    public static GuardMode parse(String s) {
        for (GuardMode m : values()) if (m.name().equalsIgnoreCase(s)) return m;
        throw new IllegalArgumentException("guard mode '" + s + "' is not one of off, report, revert");
    }
}
