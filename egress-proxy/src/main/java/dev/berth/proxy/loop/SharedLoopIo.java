package dev.berth.proxy.loop;

import io.netty.channel.IoHandle;
import io.netty.channel.IoHandler;
import io.netty.channel.IoHandlerContext;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.IoRegistration;
import io.netty.channel.local.LocalIoHandle;
import io.netty.channel.local.LocalIoHandler;
import io.netty.channel.nio.NioIoHandler;

/**
 * One event loop for NIO sockets and LocalChannels alike: Netty 4.2 binds each kind of channel to its own
 * {@link IoHandler}, and an attached connection (a LocalChannel pair to the engine) and its upstream socket then ran
 * on two loops, every byte handed from one thread to the other. This handler is the NIO handler with the local one
 * beside it: the loop selects as a NIO loop does, and LocalChannels, which have no I/O of their own (their reads and
 * writes are tasks on the loop), are registered with the local handler, which never blocks here.
 *
 * <p>Decision: compose the two handlers rather than put the attach pair on the NIO group's own handler (it refuses
 * handles that are not NIO's). The local handler's {@code run} only parks the thread when the context lets it block;
 * it is given a context that does not, so the selector alone decides how long the loop sleeps, and a wake-up (a task
 * from another thread, including every LocalChannel write from the engine) is the selector's.
 */
final class SharedLoopIo implements IoHandler {
    private final IoHandler nio;
    private final IoHandler local;

    private SharedLoopIo(IoHandler nio, IoHandler local) {
        this.nio = nio;
        this.local = local;
    }

    static IoHandlerFactory newFactory() {
        IoHandlerFactory n = NioIoHandler.newFactory();
        IoHandlerFactory l = LocalIoHandler.newFactory();
        return executor -> new SharedLoopIo(n.newHandler(executor), l.newHandler(executor));
    }

    private static final IoHandlerContext NEVER_BLOCK = new IoHandlerContext() {
        @Override public boolean canBlock() { return false; }
        @Override public long delayNanos(long currentTimeNanos) { return 0; }
        @Override public long deadlineNanos() { return -1; }
    };

    @Override
    public void initialize() {
        nio.initialize();
        local.initialize();
    }

    @Override
    public int run(IoHandlerContext context) {
        return nio.run(context) + local.run(NEVER_BLOCK);
    }

    @Override
    public void prepareToDestroy() {
        local.prepareToDestroy();
        nio.prepareToDestroy();
    }

    @Override
    public void destroy() {
        local.destroy();
        nio.destroy();
    }

    @Override
    public IoRegistration register(IoHandle handle) throws Exception {
        return handle instanceof LocalIoHandle ? local.register(handle) : nio.register(handle);
    }

    @Override
    public void wakeup() {
        nio.wakeup();
    }

    @Override
    public boolean isCompatible(Class<? extends IoHandle> handleType) {
        return nio.isCompatible(handleType) || local.isCompatible(handleType);
    }
}
