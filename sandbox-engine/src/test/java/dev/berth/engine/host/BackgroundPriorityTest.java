package dev.berth.engine.host;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

class BackgroundPriorityTest {

    /** Field 19 of /proc/thread-self/stat (after the command name in parentheses): the thread's nice value. */
    private static int niceOfThisThread() throws Exception {
        String stat = Files.readString(Path.of("/proc/thread-self/stat"));
        String[] after = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
        return Integer.parseInt(after[16]); // field 19 overall; the fields after ")" start at field 3
    }

    @Test
    void lowerCurrentThread_setsNice19OnThatThreadOnly() throws Exception {
        int mine = niceOfThisThread();
        var other = new CompletableFuture<int[]>();
        Thread.ofPlatform().start(() -> {
            try {
                int before = niceOfThisThread();
                boolean done = BackgroundPriority.lowerCurrentThread();
                other.complete(new int[] {before, niceOfThisThread(), done ? 1 : 0});
            } catch (Exception e) {
                other.completeExceptionally(e);
            }
        });
        int[] r = other.get();
        assertEquals(1, r[2], "setpriority refused");
        assertEquals(19, r[1]);
        assertEquals(mine, niceOfThisThread(), "the caller's own thread must keep its priority");
    }

    @Test
    void lowerCurrentThread_onAVirtualThread_doesNothing() throws Exception {
        var f = new CompletableFuture<Boolean>();
        Thread.ofVirtual().start(() -> f.complete(BackgroundPriority.lowerCurrentThread()));
        // a virtual thread moves between carriers: lowering the carrier would slow whatever runs on it next
        assertFalse(f.get());
        assertTrue(niceOfThisThread() < 19);
    }
}
