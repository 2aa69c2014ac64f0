package dev.berth.engine.namespace;

import dev.berth.engine.host.IdRanges;
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
 * @param idRange              {@code berth.namespace.idRange} ({@code START+LENGTH}) and
 *                             {@code berth.namespace.idsPerWorkspace}: the host ids workspaces are mapped onto when
 *                             Berth is root, one slot of ids per workspace
 */
public record NamespaceSettings(String layers, boolean unsafeUnconfinedRuns, IdRanges idRange) {
    static final List<String> LAYERS = List.of("auto", "ext4");

    public NamespaceSettings {
        if (!LAYERS.contains(layers)) {
            throw new IllegalArgumentException("berth.namespace.layers must be one of " + String.join(", ", LAYERS) + ", not '" + layers + "'");
        }
        if (idRange == null) throw new IllegalArgumentException("the workspace id range must be given");
    }

    /** As the canonical constructor with the default id range. */
    public NamespaceSettings(String layers, boolean unsafeUnconfinedRuns) { this(layers, unsafeUnconfinedRuns, IdRanges.DEFAULT); }

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
        String per = property.apply("berth.namespace.idsPerWorkspace");
        int perWorkspace = IdRanges.DEFAULT.perWorkspace();
        if (per != null) {
            try {
                perWorkspace = Integer.parseInt(per.strip());
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("berth.namespace.idsPerWorkspace must be a whole number of ids (1024..16777216), not '" + per + "'");
            }
        }
        String range = property.apply("berth.namespace.idRange");
        IdRanges ids;
        try {
            ids = range == null ? new IdRanges(IdRanges.DEFAULT.start(), IdRanges.DEFAULT.length(), perWorkspace)
                    : IdRanges.parse(range, perWorkspace);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(e.getMessage().startsWith("berth.") ? e.getMessage()
                    : "berth.namespace.idRange / idsPerWorkspace: " + e.getMessage(), e);
        }
        return new NamespaceSettings(layers == null ? "auto" : layers.strip(), u, ids);
    }

    /** Why the layer pool is not used although it could be, or null when the setting leaves it to the host. */
    String poolRefused() {
        return "ext4".equals(layers) ? "berth.namespace.layers=ext4 chooses per-workspace ext4 images" : null;
    }
}
