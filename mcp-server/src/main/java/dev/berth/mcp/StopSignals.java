package dev.berth.mcp;

import dev.berth.engine.Engine;
import dev.berth.engine.lifecycle.StopReport;
import java.util.concurrent.atomic.AtomicInteger;
import sun.misc.Signal;
import sun.misc.SignalHandler;

/**
 * SIGTERM and SIGINT for a serving process: the first starts the clean stop (the JVM's own handling: exit, whose
 * shutdown hook stops the engine, see {@link Engine#stop}); a second one while that runs takes the bounded fast path
 * ({@link Engine#halt}: sandboxes killed, their storage released, persistent state left as a crash would leave it)
 * and halts the process. One per process; thread-safe.
 */
final class StopSignals {
    private final Engine engine;
    private final AtomicInteger received = new AtomicInteger();
    /** Counted down when a second signal's fast path has released what it could. */
    private final java.util.concurrent.CountDownLatch fastPathDone = new java.util.concurrent.CountDownLatch(1);

    private StopSignals(Engine engine) {
        this.engine = engine;
    }

    /** Installs the handlers for {@code engine}; a signal the process was started to ignore stays ignored. */
    static StopSignals install(Engine engine) {
        StopSignals s = new StopSignals(engine);
        for (String name : new String[] {"TERM", "INT"}) {
            Signal sig = new Signal(name);
            SignalHandler[] previous = new SignalHandler[1];
            try {
                previous[0] = Signal.handle(sig, signal -> s.on(signal, previous[0]));
                if (previous[0] == SignalHandler.SIG_IGN) Signal.handle(sig, SignalHandler.SIG_IGN);
            } catch (IllegalArgumentException e) {
                // the JVM keeps this signal (-Xrs and the like): its default handling applies
            }
        }
        return s;
    }

    private void on(Signal signal, SignalHandler previous) {
        int status = 128 + signal.getNumber();
        if (received.incrementAndGet() == 1) {
            System.err.println("berth: SIG" + signal.getName() + ": stopping (a second signal stops at once, without parking)");
            // the JVM's handler exits, which runs the shutdown hook that stops the engine
            if (previous instanceof SignalHandler h && h != SignalHandler.SIG_DFL && h != SignalHandler.SIG_IGN) h.handle(signal);
            else System.exit(status);
            return;
        }
        System.err.println("berth: second SIG" + signal.getName() + " while stopping: fast stop");
        try {
            StopReport r = engine.halt();
            System.err.println("berth: stopping: " + r.line());
        } finally {
            fastPathDone.countDown();
            Runtime.getRuntime().halt(status);
        }
    }

    /**
     * For the clean stop's shutdown hook, after the engine's stop returned: when a second signal took the fast path
     * meanwhile, waits (bounded) until that has released the storage, so the JVM does not exit under it and leave a
     * workspace mounted.
     */
    void awaitFastPath() {
        if (received.get() < 2) return;
        try {
            fastPathDone.await(dev.berth.engine.lifecycle.WorkspaceStop.HALT_BOUND.toSeconds() + 5, java.util.concurrent.TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
