package dev.berth.engine.image;

import java.io.IOException;
import java.nio.file.Path;

/** Package-private helpers of the image package for tests elsewhere. */
public final class ImageTestAccess {
    private ImageTestAccess() {}

    public static String sha(Path file) throws IOException { return LayerApplier.digestOf(file); }
}
