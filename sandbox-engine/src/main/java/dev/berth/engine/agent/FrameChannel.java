package dev.berth.engine.agent;

import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Frames over a blocking SocketChannel. Reads happen on one thread only (the client's reader); writes from any
 * thread are serialized by a lock so frames never interleave byte-wise.
 */
final class FrameChannel implements AutoCloseable {
    private final SocketChannel ch;
    private final ReentrantLock writeLock = new ReentrantLock();
    private final ByteBuffer header = ByteBuffer.allocate(Protocol.HEADER);

    FrameChannel(SocketChannel ch) throws IOException {
        this.ch = ch;
        ch.configureBlocking(true);
    }

    /** Reads one frame; the length is validated before the payload is allocated. */
    Frame read() throws IOException {
        header.clear();
        readFully(header);
        header.flip();
        long len = header.getInt() & 0xffff_ffffL;
        int type = header.get() & 0xff;
        int chan = header.getInt();
        if (len < 5 || len - 5 > Protocol.MAX_PAYLOAD)
            throw new ProtocolException("frame len " + len + " outside 5.." + (Protocol.MAX_PAYLOAD + 5) + " (type 0x" + Integer.toHexString(type) + ")");
        ByteBuffer payload = ByteBuffer.allocate((int) (len - 5));
        readFully(payload);
        return new Frame(type, chan, payload.array());
    }

    private void readFully(ByteBuffer b) throws IOException {
        while (b.hasRemaining()) {
            if (ch.read(b) < 0) throw new EOFException("agent closed the stream");
        }
    }

    void write(int type, int chan, byte[] payload) throws IOException {
        write(type, chan, payload, 0, payload.length);
    }

    void write(int type, int chan, byte[] payload, int off, int len) throws IOException {
        if (len > Protocol.MAX_PAYLOAD) throw new IllegalArgumentException("payload of " + len + " bytes exceeds MAX_PAYLOAD " + Protocol.MAX_PAYLOAD);
        ByteBuffer h = ByteBuffer.allocate(Protocol.HEADER);
        h.putInt(5 + len).put((byte) type).putInt(chan).flip();
        ByteBuffer[] bufs = {h, ByteBuffer.wrap(payload, off, len)};
        writeLock.lock();
        try {
            while (bufs[1].hasRemaining() || h.hasRemaining()) ch.write(bufs);
        } finally {
            writeLock.unlock();
        }
    }

    /** Raw bytes, bypassing framing: only for tests that must send a malformed frame. */
    void writeRaw(byte[] bytes) throws IOException {
        ByteBuffer b = ByteBuffer.wrap(bytes);
        writeLock.lock();
        try {
            while (b.hasRemaining()) ch.write(b);
        } finally {
            writeLock.unlock();
        }
    }

    boolean isOpen() { return ch.isOpen(); }

    @Override
    public void close() {
        try {
            ch.close();
        } catch (IOException ignored) {
            // closing is best effort; the reader notices either way
        }
    }
}
