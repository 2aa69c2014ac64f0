package dev.berth.engine.agent;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/** Bounds-checked parsing of a payload the agent sent; any overrun is a protocol violation. */
final class PayloadReader {
    private final ByteBuffer buf;
    private final String what;

    PayloadReader(Frame frame) {
        this.buf = ByteBuffer.wrap(frame.payload());
        this.what = Protocol.typeName(frame.type());
    }

    private void need(int n) throws ProtocolException {
        if (buf.remaining() < n)
            throw new ProtocolException("malformed " + what + " payload: need " + n + " bytes at offset " + buf.position()
                    + ", only " + buf.remaining() + " left");
    }

    int u8() throws ProtocolException { need(1); return buf.get() & 0xff; }
    int u16() throws ProtocolException { need(2); return buf.getShort() & 0xffff; }
    int i32() throws ProtocolException { need(4); return buf.getInt(); }
    long u32() throws ProtocolException { need(4); return buf.getInt() & 0xffff_ffffL; }
    long i64() throws ProtocolException { need(8); return buf.getLong(); }

    String str() throws ProtocolException {
        long n = u32();
        if (n > buf.remaining()) throw new ProtocolException("malformed " + what + " payload: str length " + n + " exceeds the " + buf.remaining() + " bytes left");
        byte[] b = new byte[(int) n];
        buf.get(b);
        return new String(b, StandardCharsets.UTF_8);
    }

    byte[] rest() {
        byte[] b = new byte[buf.remaining()];
        buf.get(b);
        return b;
    }

    int remaining() { return buf.remaining(); }

    void end() throws ProtocolException {
        if (buf.hasRemaining()) throw new ProtocolException("malformed " + what + " payload: " + buf.remaining() + " trailing bytes");
    }
}
