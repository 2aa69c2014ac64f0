package dev.berth.engine.microvm;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The guest image build scripts as shipped in the jar (classpath {@code berth/images/}), unpacked once into
 * {@code cache/scripts-<hash>/} so the image builder can run them. Content-addressed: a new jar with changed scripts
 * gets a new folder, and the image hashes (which include the scripts) change with it. Thread-safe.
 */
final class ImageScripts {
    static final List<String> FILES = List.of("build-test-image.sh", "build-dev-image.sh", "fetch-kernel.sh", "init",
            "berth-reseed.c", "README.md");

    private ImageScripts() {}

    /**
     * The unpacked scripts' folder. Not synchronized: each caller unpacks into its own temporary folder and renames
     * it into place, and a caller that loses the race (another thread or process) keeps the winner's identical copy.
     */
    static Path extract(Path cache) throws IOException {
        Map<String, byte[]> files = new LinkedHashMap<>();
        MessageDigest sha;
        try {
            sha = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
        for (String f : FILES) {
            try (InputStream in = ImageScripts.class.getClassLoader().getResourceAsStream("berth/images/" + f)) {
                if (in == null) throw new IOException("berth/images/" + f + " is missing from the classpath; rebuild with mvn package");
                byte[] b = in.readAllBytes();
                files.put(f, b);
                sha.update(f.getBytes(java.nio.charset.StandardCharsets.UTF_8));
                sha.update(b);
            }
        }
        Path dir = cache.resolve("scripts-" + HexFormat.of().formatHex(sha.digest()).substring(0, 16));
        if (Files.isRegularFile(dir.resolve(FILES.get(0)))) return dir;
        Files.createDirectories(cache);
        Path tmp = Files.createTempDirectory(cache, ".scripts-");
        for (var e : files.entrySet()) Files.write(tmp.resolve(e.getKey()), e.getValue());
        try {
            Files.move(tmp, dir, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            if (!Files.isRegularFile(dir.resolve(FILES.get(0)))) throw e;
            dev.berth.engine.spi.Trees.delete(tmp); // another thread or process unpacked the same scripts first
        }
        return dir;
    }
}
