package dev.berth.engine.namespace;

import java.util.List;
import java.util.Locale;
import java.util.function.UnaryOperator;

/**
 * Every tunable of the namespace driver, read once when the driver is made ({@link #fromSystem}) and handed down by
 * constructor. Documented in {@code docs/settings.md}; a value out of range is refused here with the allowed
 * values. Immutable.
 *
 * @param layers               {@code berth.namespace.layers}: {@code auto} (the btrfs layer pool where it can be used)
 *                             or {@code ext4} (per-workspace ext4 images always)
 * @param unsafeUnconfinedRuns {@code berth.namespace.unsafeUnconfinedRuns}: commands run as the agent's children,
 *                             not confined below it (benchmarks only)
 */
public record NamespaceSettings(String layers, boolean unsafeUnconfinedRuns) {
    static final List<String> LAYERS = List.of("auto", "ext4");

    public NamespaceSettings {
        if (!LAYERS.contains(layers)) {
            throw new IllegalArgumentException("berth.namespace.layers must be one of " + String.join(", ", LAYERS) + ", not '" + layers + "'");
        }
    }

    /** The defaults, as when no property is set. */
    public static NamespaceSettings defaults() { return new NamespaceSettings("auto", false); }

    /**
     * The settings from the {@code berth.namespace.*} system properties, the defaults where one is unset.
     *
     * @throws IllegalArgumentException naming the property and its allowed values when one is out of range
     */
    public static NamespaceSettings fromSystem() { return from(System::getProperty); }

    /** As {@link #fromSystem}, from {@code property} (name to value, null when unset). */
    static NamespaceSettings from(UnaryOperator<String> property) {
        String layers = property.apply("berth.namespace.layers");
        String unconfined = property.apply("berth.namespace.unsafeUnconfinedRuns");
        boolean u = false;
        if (unconfined != null) {
            u = switch (unconfined.strip().toLowerCase(Locale.ROOT)) {
                case "true" -> true;
                case "false" -> false;
                default -> throw new IllegalArgumentException(
                        "berth.namespace.unsafeUnconfinedRuns must be true or false, not '" + unconfined + "'");
            };
        }
        return new NamespaceSettings(layers == null ? "auto" : layers.strip(), u);
    }

    /** Why the layer pool is not used although it could be, or null when the setting leaves it to the host. */
    String poolRefused() {
        return "ext4".equals(layers) ? "berth.namespace.layers=ext4 chooses per-workspace ext4 images" : null;
    }
}
