package dev.berth.engine.host;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A binary shipped inside the Berth jar as a classpath resource (the guest agent, the QEMU jail launcher), written
 * to a content-addressed file {@code dir/NAME-HASH} (mode 0555) so it can be executed or bound into a sandbox. The
 * resource is read and hashed once per process. The directory must be writable by Berth only: whoever can replace
 * the file decides what runs. Thread-safe.
 */
public final class ShippedBinary {
    private record Loaded(byte[] bytes, String hash) {}

    /** Process-wide on purpose: a cache of what the jar holds, which is the same for every home and never changes. */
    private static final Map<String, Loaded> LOADED = new ConcurrentHashMap<>();

    private ShippedBinary() {}

    /** The path of {@code resource} as {@code dir/name-HASH}, written there first if it is not there yet. */
    public static synchronized Path extract(String resource, String name, Path dir) throws IOException {
        Loaded b = LOADED.get(resource);
        if (b == null) {
            try (InputStream in = ShippedBinary.class.getClassLoader().getResourceAsStream(resource)) {
                if (in == null) throw new IOException(name + " is missing from the classpath (" + resource + "); rebuild with mvn package");
                byte[] bytes = in.readAllBytes();
                b = new Loaded(bytes, HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes)).substring(0, 16));
            } catch (NoSuchAlgorithmException e) {
                throw new IllegalStateException(e);
            }
            LOADED.put(resource, b);
        }
        Path target = dir.resolve(name + "-" + b.hash());
        if (Files.isRegularFile(target) && Files.size(target) == b.bytes().length) return target;
        Files.createDirectories(dir);
        Path tmp = target.resolveSibling("." + target.getFileName() + "." + ProcessHandle.current().pid());
        Files.write(tmp, b.bytes());
        Files.setPosixFilePermissions(tmp, PosixFilePermissions.fromString("r-xr-xr-x"));
        Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        return target;
    }
}
