package dev.berth.engine.microvm;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * The work the microVM driver of one Berth home lets finish after a call has returned: parked machines' QEMU exits,
 * hole punching in parked RAM files, RAM files' write-back, the park manifest's digests, and the threads the settings
 * after HELLO go out on.
 * One instance per driver (the engine holds one driver per home); its sandboxes get it by constructor.
 *
 * <p>Implementation notes: entries are keyed by normalised absolute path, so a workspace's state directory (or RAM
 * file) is one key whoever names it. An entry removes itself when its task ends. Thread-safe.
 */
final class BackgroundTasks {

    /** QEMUs of parked workspaces that were told to quit and may not have exited yet, by state directory. */
    private final Map<Path, CompletableFuture<Void>> exiting = new ConcurrentHashMap<>();
    /** RAM files whose zero blocks are being punched into holes after a park, by path. */
    private final Map<Path, Digger> digging = new ConcurrentHashMap<>();

    /** One thread writes RAM files out for every workspace, one at a time, so two do not compete for the disk. */
    private final ExecutorService writeOut;
    /** Guest syncs, one virtual thread each: they only wait on the agent. */
    final ExecutorService guestSync = Executors.newThreadPerTaskExecutor(Thread.ofVirtual().name("berth-guest-sync-", 0).factory());
    /** Virtual threads for the settings a start sends together after HELLO (they only wait on a socket). */
    final ExecutorService settings = Executors.newThreadPerTaskExecutor(Thread.ofVirtual().name("berth-vm-settings-", 0).factory());

    /**
     * Threads that digest pages for the park manifest (one per core, at least two: the common pool has a single worker
     * on a 2-core host, and a park's fsync or a resume's QEMU start must not queue behind a digest).
     */
    final ExecutorService digest;
    /**
     * Virtual threads that only wait: on digests (never the digest pool itself, so a fixed pool cannot deadlock on its
     * own joins), fsyncs, copies and the manifest's check beside a QEMU start.
     */
    final ExecutorService waits = Executors.newThreadPerTaskExecutor(Thread.ofVirtual().name("berth-digest-wait-", 0).factory());

    BackgroundTasks() {
        // the pools' platform threads end when idle, so a driver that is dropped leaves no thread behind
        this.writeOut = idleEnding(1, "berth-ram-writeout");
        this.digest = idleEnding(Math.max(2, Runtime.getRuntime().availableProcessors()), "berth-digest-");
    }

    private static ExecutorService idleEnding(int threads, String name) {
        ThreadPoolExecutor p = new ThreadPoolExecutor(threads, threads, 60, TimeUnit.SECONDS, new LinkedBlockingQueue<>(),
                (threads == 1 ? Thread.ofPlatform().daemon().name(name) : Thread.ofPlatform().daemon().name(name, 0)).factory());
        p.allowCoreThreadTimeOut(true);
        return p;
    }

    /** The executor that writes RAM files out, one at a time for every workspace of the home. */
    ExecutorService writeOut() { return writeOut; }

    private static Path key(Path p) { return p.toAbsolutePath().normalize(); }

    /** Records that the QEMU of {@code stateDir} is exiting; {@code exit} completes once it is gone and cleaned up. */
    void exiting(Path stateDir, CompletableFuture<Void> exit) {
        Path key = key(stateDir);
        exiting.put(key, exit);
        exit.whenComplete((x, e) -> exiting.remove(key, exit));
    }

    /**
     * Waits until a parked workspace's QEMU has exited (park does not wait for it): it holds the disk's image lock
     * and its runtime files until then.
     */
    void awaitExit(Path stateDir) {
        var f = exiting.get(key(stateDir));
        if (f != null) f.exceptionally(x -> null).join();
    }

    /**
     * Waits until every parked machine told to quit has exited (each is killed after 10 s at most), then until hole
     * punching has ended: a new driver on the same home (a restarted engine in this JVM) could not stop it before a
     * resume maps the file.
     */
    void quiesce() {
        for (var f : List.copyOf(exiting.values())) f.exceptionally(x -> null).join();
        for (Digger d : List.copyOf(digging.values())) d.done.join();
    }

    /** One {@code fallocate --dig-holes} run; {@link #stop} ends it early (the file stays as dug so far). */
    private static final class Digger {
        final CompletableFuture<Void> done = new CompletableFuture<>();
        private Process process;
        private boolean stopped;

        synchronized Process start(Path ram) throws IOException {
            if (stopped) return null;
            process = new ProcessBuilder("fallocate", "--dig-holes", ram.toString())
                    .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            return process;
        }

        void stop() {
            synchronized (this) {
                stopped = true;
                if (process != null) process.destroyForcibly();
            }
            done.join();
        }
    }

    /**
     * Punches the zero blocks of a parked RAM file into holes, off the park path. The content stays the same (the
     * manifest stays true). QEMU writing a page while fallocate punches it could lose the write, so a resume stops it
     * first ({@link #stopHoles}: each punch is one atomic {@code fallocate} call on a range that reads zero, so ending
     * it at any point leaves the content as it was, with fewer holes) and a snapshot waits for it ({@link #awaitHoles}).
     * It starts once {@code after} (the park's digests, which read the same blocks) is done.
     */
    void digHolesLater(Path ram, CompletableFuture<Void> after) {
        Path key = key(ram);
        Digger d = new Digger();
        digging.put(key, d);
        Thread.ofVirtual().name("berth-dig-holes").start(() -> {
            try {
                after.exceptionally(x -> null).join();
                Process p = d.start(key);
                if (p != null) p.waitFor(120, TimeUnit.SECONDS);
            } catch (IOException e) {
                // not every filesystem can punch holes; the file is then just larger
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                digging.remove(key, d);
                d.done.complete(null);
            }
        });
    }

    /** Waits until no hole punching runs on {@code ram}. */
    void awaitHoles(Path ram) {
        Digger d = digging.get(key(ram));
        if (d != null) d.done.join();
    }

    /** Ends any hole punching on {@code ram} now and waits until its process is gone (a resume is about to map it). */
    void stopHoles(Path ram) {
        Digger d = digging.get(key(ram));
        if (d != null) d.stop();
    }

    /**
     * Writes the copied RAM file back to disk in the background, off the open path. The copy put its tens of MiB in
     * the page cache as dirty pages; the kernel would write them back within {@code dirty_expire_centisecs} (30 s)
     * anyway, but a park before then had to wait for all of them in its RAM fsync (most of a young workspace's park
     * time). Writing them now leaves a park only the pages the guest changed since.
     */
    void writeBackLater(Path ram) {
        Thread.ofVirtual().name("berth-ram-writeback").start(() -> writeBack(ram));
    }

    /** Writes a RAM file's dirty pages to disk ({@code fdatasync}); quietly does nothing when it cannot. */
    static void writeBack(Path ram) {
        try (FileChannel ch = FileChannel.open(ram, StandardOpenOption.WRITE)) {
            ch.force(false);
        } catch (IOException e) {
            // the file is gone (the workspace was closed) or the disk refused: park fsyncs it itself and reports that
        }
    }
}
