package dev.berth.engine.gvisor;

import java.nio.file.Path;
import java.util.function.UnaryOperator;

/**
 * Every tunable of the gVisor driver, read once when the driver is made ({@link #fromSystem}) and handed down by
 * constructor. Documented in {@code docs/settings.md}. Immutable.
 *
 * @param debugDir {@code berth.gvisor.debug} (or the environment variable {@code BERTH_GVISOR_DEBUG}): where runsc
 *                 writes a debug log with a system-call trace per workspace (unbounded: never in production); null
 *                 for none
 */
public record GvisorSettings(Path debugDir) {

    /** The defaults, as when nothing is set: no debug log. */
    public static GvisorSettings defaults() { return new GvisorSettings(null); }

    /**
     * The settings from the {@code berth.gvisor.*} system properties (and their environment variables).
     *
     * @throws IllegalArgumentException naming the property when a value is not usable
     */
    public static GvisorSettings fromSystem() {
        String env = System.getenv("BERTH_GVISOR_DEBUG");
        return from(name -> System.getProperty(name, "berth.gvisor.debug".equals(name) ? env : null));
    }

    /** As {@link #fromSystem}, from {@code property} (name to value, null when unset). */
    static GvisorSettings from(UnaryOperator<String> property) {
        String debug = property.apply("berth.gvisor.debug");
        if (debug == null) return defaults();
        if (debug.isBlank()) throw new IllegalArgumentException("berth.gvisor.debug must name a directory, not be empty");
        try {
            return new GvisorSettings(Path.of(debug));
        } catch (java.nio.file.InvalidPathException e) {
            throw new IllegalArgumentException("berth.gvisor.debug must name a directory, not '" + debug + "'");
        }
    }
}
