package dev.berth.engine.spi;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Mutual exclusion over one lock file, between the threads of this process and other processes: a reentrant lock
 * orders the threads, and the outermost holder takes the OS file lock for the process.
 *
 * <p>Thread-safe. One instance per lock file for the whole process ({@link #of}); the channel and the OS lock are
 * guarded by the thread lock and live only while some thread holds it.
 */
public final class FileMutex {
    /**
     * Process-wide on purpose: an OS file lock belongs to the process, and a second channel of this JVM locking the
     * same file fails with OverlappingFileLockException instead of waiting, so every thread that locks one file must
     * go through the same instance. Grows by one entry per lock file the process uses (a handful of homes and caches).
     */
    private static final ConcurrentMap<Path, FileMutex> BY_FILE = new ConcurrentHashMap<>();

    private final Path file;
    private final ReentrantLock threads = new ReentrantLock();
    private FileChannel channel;
    private FileLock osLock;

    private FileMutex(Path file) { this.file = file; }

    /** The mutex of {@code file} (created, with its parent directories, when first locked). */
    public static FileMutex of(Path file) {
        return BY_FILE.computeIfAbsent(file.toAbsolutePath().normalize(), FileMutex::new);
    }

    /** Waits for the threads of this process, then for other processes; reentrant. Close the result to release. */
    public Held lock() throws IOException {
        threads.lock();
        try {
            if (threads.getHoldCount() == 1) {
                Files.createDirectories(file.getParent());
                channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
                osLock = channel.lock();
            }
        } catch (IOException | RuntimeException e) {
            if (threads.getHoldCount() == 1 && channel != null) {
                channel.close();
                channel = null;
            }
            threads.unlock();
            throw e;
        }
        return this::unlock;
    }

    private void unlock() throws IOException {
        try {
            if (threads.getHoldCount() == 1) {
                try {
                    osLock.release();
                } finally {
                    channel.close();
                    channel = null;
                    osLock = null;
                }
            }
        } finally {
            threads.unlock();
        }
    }

    /** A hold of the mutex; closing it releases one level of the hold. */
    @FunctionalInterface
    public interface Held extends AutoCloseable {
        @Override void close() throws IOException;
    }
}
