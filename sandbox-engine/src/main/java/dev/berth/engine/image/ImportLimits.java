package dev.berth.engine.image;

/**
 * What an import may take. An image above either limit is refused with the numbers, and nothing is kept.
 *
 * @param maxLayerBytes compressed bytes of all layers together (checked before anything is unpacked)
 * @param maxTreeBytes  bytes of the unpacked root tree (checked while unpacking)
 */
public record ImportLimits(long maxLayerBytes, long maxTreeBytes) {
    /** 4 GiB of layers, 8 GiB unpacked; {@code -Dberth.images.maxTreeMiB} changes the second. */
    public static final ImportLimits DEFAULT = new ImportLimits(4L << 30,
            Long.getLong("berth.images.maxTreeMiB", 8192L) << 20);

    public ImportLimits {
        if (maxLayerBytes <= 0 || maxTreeBytes <= 0) throw new IllegalArgumentException("image limits must be positive");
    }
}
