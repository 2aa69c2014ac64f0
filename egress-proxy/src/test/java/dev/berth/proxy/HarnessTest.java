package dev.berth.proxy;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** Base of the test classes that share one {@link Harness} (proxy, upstreams, resolver) per class. */
abstract class HarnessTest {
    static Harness h;

    @BeforeAll
    static void startHarness() throws Exception {
        h = new Harness();
    }

    @AfterAll
    static void stopHarness() throws Exception {
        h.close();
    }
}
