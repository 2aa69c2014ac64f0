package dev.berth.proxy.tls;

import io.netty.buffer.ByteBuf;
import java.nio.charset.StandardCharsets;

/**
 * Extracts the SNI host name from the first TLS record of a tunnel, without terminating TLS.
 *
 * <p>Why: the CONNECT line names a host we vetted; nothing stops a client from then speaking TLS
 * to that address for a different name (shared CDN front ends route on SNI). Requiring SNI ==
 * CONNECT host closes that, except for fronting via the encrypted HTTP Host header, which no
 * non-terminating proxy can see (documented gap).
 *
 * <p>Only the first record is examined; a ClientHello spanning several records is refused
 * (real clients fit it into one record, including post-quantum key shares at ~1.8 KB).
 */
public final class ClientHelloParser {
    private ClientHelloParser() {}

    /** Result: NEED_MORE, or a parsed SNI (null = absent), or an error reason. */
    public record Result(boolean needMore, String sni, String error) {
        static final Result NEED_MORE = new Result(true, null, null);

        static Result error(String reason) {
            return new Result(false, null, reason);
        }
    }

    public static final int MAX_RECORD = 16384 + 256;

    public static Result parse(ByteBuf buf) {
        int base = buf.readerIndex();
        int avail = buf.readableBytes();
        if (avail < 1) return Result.NEED_MORE;
        if (buf.getUnsignedByte(base) != 22) {
            return Result.error("first bytes of the tunnel are not a TLS handshake record (byte 0x"
                    + Integer.toHexString(buf.getUnsignedByte(base)) + ")");
        }
        if (avail < 5) return Result.NEED_MORE;
        if (buf.getUnsignedByte(base + 1) != 3) return Result.error("unsupported TLS record version");
        int recLen = buf.getUnsignedShort(base + 3);
        if (recLen > MAX_RECORD || recLen < 4) return Result.error("TLS record length " + recLen + " out of range");
        if (avail < 5 + recLen) return Result.NEED_MORE;
        try {
            return parseHandshake(buf.slice(base + 5, recLen));
        } catch (IndexOutOfBoundsException e) {
            return Result.error("truncated TLS ClientHello");
        }
    }

    private static Result parseHandshake(ByteBuf r) {
        if (r.readUnsignedByte() != 1) return Result.error("first TLS handshake message is not a ClientHello");
        int len = r.readUnsignedMedium();
        if (len > r.readableBytes()) return Result.error("TLS ClientHello spans multiple records (not supported)");
        ByteBuf h = r.readSlice(len);
        h.skipBytes(2 + 32); // legacy_version, random
        h.skipBytes(h.readUnsignedByte()); // session id
        h.skipBytes(h.readUnsignedShort()); // cipher suites
        h.skipBytes(h.readUnsignedByte()); // compression methods
        if (!h.isReadable()) return new Result(false, null, null);
        ByteBuf ext = h.readSlice(h.readUnsignedShort());
        String sni = null;
        boolean seen = false;
        while (ext.isReadable()) {
            int type = ext.readUnsignedShort();
            ByteBuf body = ext.readSlice(ext.readUnsignedShort());
            if (type != 0) continue;
            if (seen) return Result.error("duplicate server_name extension in ClientHello");
            seen = true;
            ByteBuf list = body.readSlice(body.readUnsignedShort());
            while (list.isReadable()) {
                int nameType = list.readUnsignedByte();
                ByteBuf name = list.readSlice(list.readUnsignedShort());
                if (nameType != 0) continue;
                if (sni != null) return Result.error("more than one host_name in ClientHello server_name");
                sni = name.toString(StandardCharsets.ISO_8859_1);
            }
            if (sni == null) return Result.error("server_name extension without a host_name");
        }
        return new Result(false, sni, null);
    }
}
