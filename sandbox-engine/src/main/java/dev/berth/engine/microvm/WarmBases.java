package dev.berth.engine.microvm;

import dev.berth.engine.spi.Resources;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

/**
 * The cache of warm bases: one pristine snapshot per (image, shape), taken right after the first boot, that fresh
 * workspaces are forked from (see {@link MicrovmDriver}). The cache lives in the image cache and is shared by every
 * Berth home of the user, so several servers may use and collect it at once.
 *
 * <p>A fork of a base copies what it needs (the RAM file and the small data disk, sparse) and loads the device state
 * before its guest runs; afterwards nothing refers to the base. A base is therefore a pure cache and can be removed
 * whenever no fork is reading it: a fork holds a shared lock on the base's {@code lock} file while it reads, the
 * collector takes it exclusively (and skips a base in use), moves the base out of the way atomically, then deletes
 * it. A fork that finds its base gone boots instead.
 *
 * <p>Collected: bases of an image of the same kind that is no longer the current one (the image was rebuilt or
 * upgraded), bases not used for {@link #UNUSED_FOR}, and creations a crash abandoned. Bases written before forks
 * copied their disk (no {@link #SELF_CONTAINED} mark) may still back another home's workspace disks and are kept.
 */
final class WarmBases {
    private static final System.Logger LOG = System.getLogger("berth.microvm");
    static final String COMPLETE = "base-complete";
    /** Marks a base whose forks copy its disk, so nothing refers to it once they have started. */
    static final String SELF_CONTAINED = "forks-own-disk";
    static final String LOCK = "lock";
    static final Duration UNUSED_FOR = Duration.ofDays(14);
    private static final Duration ABANDONED_AFTER = Duration.ofHours(1);

    private final Path dir;
    /** Guests booted with their runs unconfined ({@link MicrovmSettings#unsafeUnconfinedRuns()}) get bases of their own. */
    private final boolean unconfinedRuns;

    WarmBases(Path imageCache, boolean unconfinedRuns) {
        this.dir = imageCache.resolve("bases");
        this.unconfinedRuns = unconfinedRuns;
    }

    Path dir() { return dir; }

    /** Where the base of this image and shape lives (it may not exist yet). */
    Path of(String imageId, Resources r, int proxyPort) {
        return dir.resolve(imageId + "-m" + r.memoryMiB() + "-c" + r.vcpus() + "-d" + r.diskMiB() + "-p" + proxyPort
                + (unconfinedRuns ? "-unconfined" : "")); // a guest booted with its runs unconfined
    }

    /** A shared hold on a base while a fork reads it; closing releases it. */
    interface Lease extends AutoCloseable {
        @Override
        void close();
    }

    /**
     * Takes a shared hold on {@code base} if it is complete; empty when it is missing, incomplete or being removed.
     * Marks the base as used now (its last-used time is the mark's modification time).
     */
    java.util.Optional<Lease> use(Path base) {
        if (!Files.isRegularFile(base.resolve(COMPLETE))) return java.util.Optional.empty();
        FileChannel ch = null;
        try {
            ch = FileChannel.open(base.resolve(LOCK), StandardOpenOption.CREATE, StandardOpenOption.READ, StandardOpenOption.WRITE);
            FileLock lock = ch.lock(0, Long.MAX_VALUE, true);
            if (!Files.isRegularFile(base.resolve(COMPLETE))) { // removed while we waited for the lock
                lock.release();
                ch.close();
                return java.util.Optional.empty();
            }
            Files.setLastModifiedTime(base.resolve(COMPLETE), FileTime.from(Instant.now()));
            FileChannel held = ch;
            return java.util.Optional.of(() -> {
                try {
                    held.close(); // releases the lock
                } catch (IOException ignored) {
                    // the lock goes with the descriptor
                }
            });
        } catch (IOException | OverlappingFileLockException e) {
            if (ch != null) {
                try {
                    ch.close();
                } catch (IOException ignored) {
                    // nothing held
                }
            }
            return java.util.Optional.empty();
        }
    }

    /** Publishes a finished base made in {@code tmp} (a sibling of {@code base}) under its final name, atomically. */
    void publish(Path tmp, Path base) throws IOException {
        Files.writeString(tmp.resolve(SELF_CONTAINED), "forks copy this base's disk and RAM: nothing refers to it after their start\n");
        Files.writeString(tmp.resolve(COMPLETE), "pristine snapshot right after boot\n");
        Files.move(tmp, base, StandardCopyOption.ATOMIC_MOVE);
    }

    /**
     * Removes the bases nobody needs any more (see the class comment), skipping any in use; returns the names
     * removed. {@code currentImageId} is the image this driver now boots, e.g. {@code test-56221a95190e8c30}: bases
     * of another image of the same kind ({@code test-...}) are superseded.
     */
    List<String> collect(String currentImageId, Instant now) {
        List<String> removed = new ArrayList<>();
        if (!Files.isDirectory(dir)) return removed;
        String kind = currentImageId.substring(0, currentImageId.indexOf('-') + 1);
        List<Path> entries;
        try (var s = Files.list(dir)) {
            entries = s.toList();
        } catch (IOException e) {
            return removed;
        }
        for (Path p : entries) {
            String name = p.getFileName().toString();
            try {
                if (name.startsWith(".base-") || name.startsWith(".trash-")) {
                    if (Files.getLastModifiedTime(p).toInstant().isBefore(now.minus(ABANDONED_AFTER))) {
                        dev.berth.engine.spi.Trees.delete(p);
                        removed.add(name);
                    }
                    continue;
                }
                if (!Files.isRegularFile(p.resolve(SELF_CONTAINED))) continue; // may back older forks' disks
                String why = null;
                if (name.startsWith(kind) && !name.startsWith(currentImageId + "-m")) {
                    why = "superseded by " + currentImageId;
                } else if (Files.getLastModifiedTime(p.resolve(COMPLETE)).toInstant().isBefore(now.minus(UNUSED_FOR))) {
                    why = "unused for more than " + UNUSED_FOR.toDays() + " days";
                }
                if (why != null && remove(p)) {
                    removed.add(name);
                    LOG.log(System.Logger.Level.INFO, "warm base " + name + " removed: " + why);
                }
            } catch (IOException e) {
                LOG.log(System.Logger.Level.WARNING, "warm base " + name + " not collected: " + e.getMessage());
            }
        }
        return removed;
    }

    /** Removes one base unless a fork holds it. */
    private boolean remove(Path base) throws IOException {
        Path trash;
        try (FileChannel ch = FileChannel.open(base.resolve(LOCK), StandardOpenOption.CREATE, StandardOpenOption.WRITE)) {
            FileLock lock;
            try {
                lock = ch.tryLock(0, Long.MAX_VALUE, false);
            } catch (OverlappingFileLockException e) {
                return false; // this process is forking from it
            }
            if (lock == null) return false; // another process is
            trash = base.resolveSibling(".trash-" + base.getFileName() + "-" + Long.toHexString(System.nanoTime()));
            Files.delete(base.resolve(COMPLETE)); // a fork that waited for the lock sees the base gone
            Files.move(base, trash, StandardCopyOption.ATOMIC_MOVE);
        }
        dev.berth.engine.spi.Trees.delete(trash);
        return true;
    }
}
