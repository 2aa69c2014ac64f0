package dev.berth.mcp.tools;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class CancellationsTest {
    final Cancellations c = new Cancellations();
    /** one thread per call, like the SDK's worker pool (the common pool may have a single thread on 2 cores) */
    final java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newCachedThreadPool();

    @org.junit.jupiter.api.AfterEach
    void stopPool() {
        pool.shutdownNow();
    }

    /** A call that blocks until interrupted; returns "interrupted" or "finished". */
    CompletableFuture<String> blockingCall(String key, CountDownLatch started) {
        return CompletableFuture.supplyAsync(() -> c.run(key, () -> {
            started.countDown();
            try {
                Thread.sleep(30_000); // a call that works on until it is interrupted: what cancel must end
                return "finished";
            } catch (InterruptedException e) {
                return "interrupted";
            }
        }), pool);
    }

    @Test
    void cancel_interruptsOnlyTheCallWithThatKey() throws Exception {
        CountDownLatch started = new CountDownLatch(2);
        var a = blockingCall("alice|s1|n:1", started);
        var b = blockingCall("bob|s1|n:1", started);
        assertTrue(started.await(30, TimeUnit.SECONDS));
        assertTrue(c.cancel("alice|s1|n:1", "test"));
        assertEquals("interrupted", a.get(30, TimeUnit.SECONDS));
        assertFalse(b.isDone(), "bob's call with the same request id must keep running");
        assertTrue(c.cancel("bob|s1|n:1", null));
        assertEquals("interrupted", b.get(30, TimeUnit.SECONDS));
    }

    @Test
    void cancelBeforeStart_isAppliedWhenTheCallStarts() throws Exception {
        assertFalse(c.cancel("t|s|n:7", "raced ahead"));
        assertEquals("interrupted", blockingCall("t|s|n:7", new CountDownLatch(1)).get(30, TimeUnit.SECONDS));
    }

    @Test
    void interruptDoesNotLeakIntoTheWorkerThreadsNextTask() {
        c.run("k", () -> {
            Thread.currentThread().interrupt(); // as the engine does after killing a cancelled command
            return null;
        });
        assertFalse(Thread.currentThread().isInterrupted());
        assertFalse(c.cancel("k", null), "a finished call is no longer cancellable");
    }

    @Test
    void nullKey_runsPlainly() {
        assertEquals("x", c.run(null, () -> "x"));
    }
}
