package dev.berth.engine.workspace;

import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.EngineException.Kind;
import dev.berth.engine.api.HomeOwnedException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * Ownership of a Berth home: the first process to lock {@code home/owner.lock} owns the home, and only the owner
 * recovers, starts or stops sandboxes there. The lock is an OS file lock, so it dies with the process ({@code kill -9}
 * included) and the next start takes over cleanly; the file also names the owner's pid for messages. Thread-safe.
 */
public final class HomeLock implements AutoCloseable {
    static final String FILE = "owner.lock";

    private final FileChannel channel;
    private final FileLock lock;

    private HomeLock(FileChannel channel, FileLock lock) {
        this.channel = channel;
        this.lock = lock;
    }

    /**
     * Takes the home, or refuses with CONFLICT naming the process that owns it.
     *
     * @throws HomeOwnedException when another live process owns the home
     * @throws EngineException   UNAVAILABLE when the lock file cannot be used at all
     */
    public static HomeLock acquire(Path home) throws EngineException {
        Path file = home.resolve(FILE);
        FileChannel ch = null;
        try {
            Files.createDirectories(home);
            ch = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.READ, StandardOpenOption.WRITE);
            FileLock l;
            try {
                l = ch.tryLock();
            } catch (OverlappingFileLockException e) {
                l = null; // this JVM holds it already (another engine on the same home)
            }
            if (l == null) {
                Long pid = owner(home).orElse(null);
                String owner = pid == null ? "another Berth process" : "Berth process " + pid;
                ch.close();
                throw new HomeOwnedException(home, pid, "home " + home + " is owned by " + owner
                        + "; a second server on one home would fight over its sandboxes. `berth stdio` attaches to the"
                        + " owner by itself; otherwise stop the owner or use another --home");
            }
            ch.truncate(0);
            ch.write(ByteBuffer.wrap((ProcessHandle.current().pid() + "\n").getBytes(StandardCharsets.US_ASCII)), 0);
            ch.force(false);
            return new HomeLock(ch, l);
        } catch (IOException e) {
            if (ch != null) try { ch.close(); } catch (IOException ignored) { }
            throw new EngineException(Kind.UNAVAILABLE, "cannot lock " + file + ": " + e.getMessage(), e);
        }
    }

    /** The pid written by the home's current or last owner, if the file holds one. */
    static java.util.Optional<Long> owner(Path home) {
        try {
            String s = Files.readString(home.resolve(FILE), StandardCharsets.US_ASCII).strip();
            return s.isEmpty() ? java.util.Optional.empty() : java.util.Optional.of(Long.parseLong(s));
        } catch (IOException | NumberFormatException e) {
            return java.util.Optional.empty();
        }
    }

    @Override
    public void close() {
        try {
            lock.release();
            channel.close();
        } catch (IOException ignored) {
            // the OS drops the lock with the descriptor anyway
        }
    }
}
