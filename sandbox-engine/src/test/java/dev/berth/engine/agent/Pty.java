package dev.berth.engine.agent;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.nio.ByteBuffer;

/**
 * A pseudo-terminal pair through the FFM API, standing in for a virtio-serial port: the agent opens the slave
 * with --device, the test speaks frames on the master. No native test dependency beyond libc.
 */
final class Pty implements AutoCloseable {
    private static final Linker LINKER = Linker.nativeLinker();
    private static final int O_RDWR = 2, O_NOCTTY = 0400, POLLIN = 1, TCSANOW = 0;
    private static final MethodHandle POSIX_OPENPT = fn("posix_openpt", FunctionDescriptor.of(JAVA_INT, JAVA_INT));
    private static final MethodHandle GRANTPT = fn("grantpt", FunctionDescriptor.of(JAVA_INT, JAVA_INT));
    private static final MethodHandle UNLOCKPT = fn("unlockpt", FunctionDescriptor.of(JAVA_INT, JAVA_INT));
    private static final MethodHandle PTSNAME_R = fn("ptsname_r", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_LONG));
    private static final MethodHandle OPEN = LINKER.downcallHandle(LINKER.defaultLookup().find("open").orElseThrow(),
            FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT), Linker.Option.firstVariadicArg(2));
    private static final MethodHandle TCGETATTR = fn("tcgetattr", FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS));
    private static final MethodHandle CFMAKERAW = fn("cfmakeraw", FunctionDescriptor.ofVoid(ADDRESS));
    private static final MethodHandle TCSETATTR = fn("tcsetattr", FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS));
    private static final MethodHandle READ = fn("read", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG));
    private static final MethodHandle WRITE = fn("write", FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG));
    private static final MethodHandle POLL = fn("poll", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT));
    private static final MethodHandle CLOSE = fn("close", FunctionDescriptor.of(JAVA_INT, JAVA_INT));

    private static MethodHandle fn(String name, FunctionDescriptor d) {
        return LINKER.downcallHandle(LINKER.defaultLookup().find(name).orElseThrow(() -> new IllegalStateException("libc lacks " + name)), d);
    }

    private final Arena arena = Arena.ofShared();
    private final int master;
    private final int slave;
    final String slavePath;

    Pty() throws Throwable {
        master = (int) POSIX_OPENPT.invokeExact(O_RDWR | O_NOCTTY);
        if (master < 0 || (int) GRANTPT.invokeExact(master) != 0 || (int) UNLOCKPT.invokeExact(master) != 0)
            throw new IOException("cannot allocate a pty (master fd " + master + ")");
        MemorySegment name = arena.allocate(128);
        if ((int) PTSNAME_R.invokeExact(master, name, 128L) != 0) throw new IOException("ptsname_r failed");
        slavePath = name.getString(0);
        // hold the slave open in raw mode ourselves, so nothing is cooked before the agent sets raw mode too
        slave = (int) OPEN.invokeExact(arena.allocateFrom(slavePath), O_RDWR | O_NOCTTY, 0);
        MemorySegment termios = arena.allocate(256);
        if (slave < 0 || (int) TCGETATTR.invokeExact(slave, termios) != 0) throw new IOException("tcgetattr " + slavePath + " failed");
        CFMAKERAW.invokeExact(termios);
        if ((int) TCSETATTR.invokeExact(slave, TCSANOW, termios) != 0) throw new IOException("tcsetattr " + slavePath + " failed");
    }

    void writeFrame(int type, int chan, byte[] payload) throws Throwable {
        ByteBuffer b = ByteBuffer.allocate(9 + payload.length).putInt(5 + payload.length).put((byte) type).putInt(chan).put(payload);
        MemorySegment seg = arena.allocate(b.capacity());
        MemorySegment.copy(b.array(), 0, seg, JAVA_BYTE_LAYOUT, 0, b.capacity());
        long off = 0;
        while (off < b.capacity()) {
            long n = (long) WRITE.invokeExact(master, seg.asSlice(off), (long) b.capacity() - off);
            if (n <= 0) throw new IOException("write to pty master failed: " + n);
            off += n;
        }
    }

    private static final java.lang.foreign.ValueLayout.OfByte JAVA_BYTE_LAYOUT = java.lang.foreign.ValueLayout.JAVA_BYTE;

    private byte[] readExactly(int len, int timeoutMs) throws Throwable {
        byte[] out = new byte[len];
        MemorySegment buf = arena.allocate(Math.max(1, len));
        MemorySegment pfd = arena.allocate(8);
        int got = 0;
        long end = System.nanoTime() + timeoutMs * 1_000_000L;
        while (got < len) {
            int left = (int) Math.max(0, (end - System.nanoTime()) / 1_000_000L);
            pfd.set(JAVA_INT, 0, master);
            pfd.set(java.lang.foreign.ValueLayout.JAVA_SHORT, 4, (short) POLLIN);
            pfd.set(java.lang.foreign.ValueLayout.JAVA_SHORT, 6, (short) 0);
            if ((int) POLL.invokeExact(pfd, 1L, left) <= 0) throw new IOException("no data from the agent on " + slavePath + " within " + timeoutMs + " ms");
            long n = (long) READ.invokeExact(master, buf, (long) (len - got));
            if (n <= 0) throw new IOException("read from pty master failed: " + n);
            MemorySegment.copy(buf, JAVA_BYTE_LAYOUT, 0, out, got, (int) n);
            got += (int) n;
        }
        return out;
    }

    Frame readFrame() throws Throwable {
        ByteBuffer h = ByteBuffer.wrap(readExactly(9, 5000));
        int len = h.getInt();
        int type = h.get() & 0xff;
        int chan = h.getInt();
        if (len < 5 || len - 5 > Protocol.MAX_PAYLOAD) throw new IOException("bad frame len " + len);
        return new Frame(type, chan, len == 5 ? new byte[0] : readExactly(len - 5, 5000));
    }

    @Override
    public void close() {
        try {
            int a = (int) CLOSE.invokeExact(slave);
            int b = (int) CLOSE.invokeExact(master);
        } catch (Throwable e) {
            throw new IllegalStateException("closing pty " + slavePath, e);
        } finally {
            arena.close();
        }
    }
}
