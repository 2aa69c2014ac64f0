package dev.berth.engine.agent;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;

/** Builds a request payload; {@link #toBytes()} refuses anything larger than MAX_PAYLOAD. */
final class PayloadWriter {
    private final ByteArrayOutputStream out = new ByteArrayOutputStream();

    PayloadWriter u8(int v) { out.write(v); return this; }
    PayloadWriter u16(int v) { out.write(v >>> 8); out.write(v); return this; }
    PayloadWriter u32(long v) { for (int s = 24; s >= 0; s -= 8) out.write((int) (v >>> s)); return this; }
    PayloadWriter u64(long v) { for (int s = 56; s >= 0; s -= 8) out.write((int) (v >>> s)); return this; }

    PayloadWriter str(String s) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        u32(b.length);
        out.writeBytes(b);
        return this;
    }

    PayloadWriter strList(List<String> list) {
        u32(list.size());
        for (String s : list) str(s);
        return this;
    }

    PayloadWriter bytes(byte[] b) { out.writeBytes(b); return this; }

    byte[] toBytes() {
        if (out.size() > Protocol.MAX_PAYLOAD)
            throw new IllegalArgumentException("request payload of " + out.size() + " bytes exceeds MAX_PAYLOAD " + Protocol.MAX_PAYLOAD);
        return out.toByteArray();
    }
}
