package dev.berth.engine.image;

import java.util.function.UnaryOperator;

/**
 * What an import may take. An image above either limit is refused with the numbers, and nothing is kept. The image
 * store's only setting, {@code berth.images.maxTreeMiB}, is read once, into {@link #DEFAULT} (see
 * {@code docs/settings.md}). Immutable.
 *
 * @param maxLayerBytes compressed bytes of all layers together (checked before anything is unpacked)
 * @param maxTreeBytes  bytes of the unpacked root tree (checked while unpacking)
 */
public record ImportLimits(long maxLayerBytes, long maxTreeBytes) {
    /** Largest {@code berth.images.maxTreeMiB}: 16 TiB. */
    static final long MAX_TREE_MIB = 16L << 20;

    /** 4 GiB of layers, 8 GiB unpacked; {@code -Dberth.images.maxTreeMiB} changes the second. */
    public static final ImportLimits DEFAULT = fromSystem();

    public ImportLimits {
        if (maxLayerBytes <= 0 || maxTreeBytes <= 0) throw new IllegalArgumentException("image limits must be positive");
    }

    /**
     * The limits from the {@code berth.images.*} system properties, the defaults where one is unset.
     *
     * @throws IllegalArgumentException naming the property and its range when a value is out of range
     */
    public static ImportLimits fromSystem() { return from(System::getProperty); }

    /** As {@link #fromSystem}, from {@code property} (name to value, null when unset). */
    static ImportLimits from(UnaryOperator<String> property) {
        String v = property.apply("berth.images.maxTreeMiB");
        long treeMiB = 8192;
        if (v != null) {
            try {
                treeMiB = Long.parseLong(v.strip());
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("berth.images.maxTreeMiB must be a whole number of MiB, not '" + v + "'");
            }
            if (treeMiB < 1 || treeMiB > MAX_TREE_MIB) {
                throw new IllegalArgumentException("berth.images.maxTreeMiB must be 1.." + MAX_TREE_MIB + ", not " + treeMiB);
            }
        }
        return new ImportLimits(4L << 30, treeMiB << 20);
    }
}
