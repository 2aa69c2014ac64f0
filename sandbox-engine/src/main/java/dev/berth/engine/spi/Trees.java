package dev.berth.engine.spi;

import java.io.IOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.stream.Stream;

/** File-tree helpers shared by the engine and the drivers. Never follow symbolic links (a sandbox may plant them). */
public final class Trees {
    private Trees() {}

    /**
     * Frees what a reference file names outside the tree (the namespace driver's pool subvolumes) before the file
     * itself is deleted. A release that fails stops the delete, so the reference survives and nothing leaks unnamed.
     */
    @FunctionalInterface
    public interface Releaser {
        void release(Path referenceFile) throws IOException;
    }

    /**
     * Process-wide on purpose: which driver writes which reference file is a fact of the code, not of a home; drivers
     * register once, from their class initialisers.
     */
    private static final java.util.Map<String, Releaser> RELEASERS = new java.util.concurrent.ConcurrentHashMap<>();

    /**
     * Registers {@code r} for every regular file named {@code fileName} that {@link #delete} meets: a driver keeping a
     * workspace's or snapshot's bulk data outside its state directory frees it when the engine deletes the directory.
     */
    public static void onDelete(String fileName, Releaser r) { RELEASERS.put(fileName, r); }

    /** Deletes a tree without following symbolic links. A missing tree is fine. */
    public static void delete(Path root) throws IOException {
        if (!Files.exists(root, LinkOption.NOFOLLOW_LINKS)) return;
        Files.walkFileTree(root, new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
                Releaser r = attrs.isRegularFile() ? RELEASERS.get(file.getFileName().toString()) : null;
                if (r != null) r.release(file);
                Files.delete(file);
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult postVisitDirectory(Path d, IOException exc) throws IOException {
                if (exc != null) throw exc;
                Files.delete(d);
                return FileVisitResult.CONTINUE;
            }
        });
    }

    /** Logical size in bytes of the regular files in a tree; 0 if it cannot be read. */
    public static long bytes(Path root) {
        try (Stream<Path> s = Files.walk(root)) {
            return s.filter(p -> Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS)).mapToLong(p -> {
                try {
                    return Files.size(p);
                } catch (IOException e) {
                    return 0;
                }
            }).sum();
        } catch (IOException | java.io.UncheckedIOException e) {
            return 0;
        }
    }
}
