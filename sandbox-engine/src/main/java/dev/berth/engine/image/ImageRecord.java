package dev.berth.engine.image;

import java.util.List;

/**
 * One imported image as kept in the store ({@code images/store/HEX/image.meta}, a {@link dev.berth.engine.spi.MetaFile}
 * of kind {@value ImageStore#KIND}, version {@value ImageStore#VERSION}). Content-addressed: the same digest is
 * imported once, whatever names point at it.
 *
 * @param digest        the image's digest: its manifest's (OCI layout, registry) or its config's (docker archive)
 * @param configDigest  the config blob's digest
 * @param origin        where it came from ({@code oci-layout:PATH:TAG}, {@code archive:PATH}, {@code registry:REF})
 * @param architecture  e.g. {@code amd64}
 * @param layers        the layers applied, in order
 * @param layerBytes    compressed size of the layers as imported
 * @param treeBytes     unpacked size of the root tree
 * @param baseDiskBytes size of the read-only ext4 base on disk (allocated blocks)
 * @param drivers       the isolation levels that can open it ({@code namespace}, {@code microvm})
 * @param env           the config's {@code Env}: every run's default environment (a run's own env wins)
 * @param workingDir    the config's {@code WorkingDir}: the default cwd of runs (null: /workspace)
 * @param user          the config's {@code User}, as written; resolved at open by {@link ImageUser} (applied by the namespace driver, see DESIGN.md)
 * @param importedAt    ISO-8601 instant
 * @param importMillis  how long the import took
 * @param report        what the import dropped or changed
 */
public record ImageRecord(String digest, String configDigest, String origin, String architecture, List<LayerInfo> layers,
                          long layerBytes, long treeBytes, long baseDiskBytes, List<String> drivers, List<String> env,
                          String workingDir, String user, String importedAt, long importMillis, ImportReport report) {

    /** One applied layer: its blob digest (null in docker archives), its uncompressed digest, its blob size. */
    public record LayerInfo(String digest, String diffId, long bytes) {}
}
