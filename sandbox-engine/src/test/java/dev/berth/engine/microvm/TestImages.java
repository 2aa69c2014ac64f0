package dev.berth.engine.microvm;

import java.nio.file.Path;

/** Where tests keep the image cache: target/berth-images unless -Dberth.images.cache says otherwise. */
final class TestImages {
    static ImageBuilder builder() {
        String c = System.getProperty("berth.images.cache");
        Path cache = c != null ? Path.of(c) : Path.of("target", "berth-images").toAbsolutePath();
        return new ImageBuilder(cache, ImageBuilder.defaultScriptsDir());
    }
}
