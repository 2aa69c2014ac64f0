package dev.berth.engine.spi;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** FileMutex: one instance per lock file, reentrant for a thread, exclusive between threads, the OS lock while held. */
class FileMutexTest {
    @TempDir
    Path dir;

    @Test
    void of_samePathSpelledTwoWays_isOneMutex() {
        assertSame(FileMutex.of(dir.resolve(".lock")), FileMutex.of(dir.resolve("x/../.lock")));
    }

    @Test
    void lock_heldTwiceByOneThread_osLockHeldUntilTheOuterHoldEnds() throws Exception {
        Path file = dir.resolve("sub/.lock");
        FileMutex m = FileMutex.of(file);
        try (FileMutex.Held outer = m.lock()) {
            try (FileMutex.Held inner = m.lock()) {
                assertTrue(processHolds(file));
            }
            assertTrue(processHolds(file), "the inner hold's end must not release the outer one's OS lock");
        }
        assertFalse(processHolds(file));
    }

    @Test
    void lock_heldByAnotherThread_waitsUntilReleased() throws Exception {
        FileMutex m = FileMutex.of(dir.resolve(".lock"));
        CountDownLatch acquired = new CountDownLatch(1);
        Thread other;
        try (FileMutex.Held held = m.lock()) {
            other = Thread.ofVirtual().start(() -> {
                try (FileMutex.Held h = m.lock()) {
                    acquired.countDown();
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            // a negative has no condition to await: the other thread is given 200 ms to get in, and must not
            assertFalse(acquired.await(200, TimeUnit.MILLISECONDS));
        }
        assertTrue(acquired.await(30, TimeUnit.SECONDS));
        other.join();
    }

    /** Whether this process holds a lock on {@code file}, as the JVM's lock table says: a second channel's tryLock overlaps. */
    private static boolean processHolds(Path file) throws Exception {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE)) {
            FileLock l = ch.tryLock();
            l.release();
            return false;
        } catch (OverlappingFileLockException e) {
            return true;
        }
    }
}
