package dev.berth.engine.lifecycle;

import dev.berth.engine.spi.IsolationDriver;
import dev.berth.engine.spi.Sandbox;
import dev.berth.engine.spi.SandboxException;
import dev.berth.engine.spi.StartRequest;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * Starts sandboxes on threads that live as long as the engine. A sandbox process can die with the thread that
 * started it (bubblewrap's {@code --die-with-parent} is the death signal of the parent <em>thread</em>), and callers'
 * threads come and go: the MCP SDK runs tool handlers on a pool that retires threads idle for a minute, which took
 * the namespace sandboxes they had started down with them. Threads are made as concurrent starts need them and stay;
 * their number is the most starts ever in flight at once. Thread-safe.
 */
public final class SandboxStarter implements AutoCloseable {
    private final ExecutorService threads = new ThreadPoolExecutor(0, Integer.MAX_VALUE, Long.MAX_VALUE, TimeUnit.NANOSECONDS,
            new SynchronousQueue<>(), Thread.ofPlatform().daemon().name("berth-start-", 0).factory());

    /**
     * {@code driver.start(request)} on a starter thread; returns its sandbox or throws its failure. The caller waits
     * for the start to finish even if interrupted (a start abandoned half-way would leave a sandbox nobody owns); the
     * interrupt is kept for it to see afterwards.
     */
    Sandbox start(IsolationDriver driver, StartRequest request) throws SandboxException {
        Future<Sandbox> f = threads.submit(() -> driver.start(request));
        boolean interrupted = false;
        try {
            while (true) {
                try {
                    return f.get();
                } catch (InterruptedException e) {
                    interrupted = true;
                } catch (ExecutionException e) {
                    switch (e.getCause()) {
                        case SandboxException s -> throw s;
                        case RuntimeException r -> throw r;
                        case Error err -> throw err;
                        default -> throw new SandboxException(driver.name() + ": start failed: " + e.getCause(), e.getCause());
                    }
                }
            }
        } finally {
            if (interrupted) Thread.currentThread().interrupt();
        }
    }

    @Override
    public void close() {
        threads.shutdownNow();
    }
}
