package dev.berth.proxy.session;

import io.netty.util.concurrent.EventExecutor;
import java.util.concurrent.TimeUnit;

/**
 * Runs a task on a connection's loop after a delay: how a connection setup shaped by its rate waits for its turn.
 * Injected with the proxy's clock, so tests release delayed setups by advancing a fake clock instead of waiting.
 */
@FunctionalInterface
public interface Delays {
    /** Runs {@code task} on {@code loop} {@code nanos} from now (by the proxy's clock). */
    void after(EventExecutor loop, long nanos, Runnable task);

    /** The event loop's own timer. */
    Delays NETTY = (loop, nanos, task) -> loop.schedule(task, nanos, TimeUnit.NANOSECONDS);
}
