package dev.berth.proxy;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;

/** Synthetic TLS 1.3-shaped ClientHello records (enough for SNI parsing; not a real handshake). */
final class ClientHellos {
    private ClientHellos() {}

    static byte[] withSni(String... names) {
        ByteArrayOutputStream ext = new ByteArrayOutputStream();
        if (names.length > 0) {
            ByteArrayOutputStream list = new ByteArrayOutputStream();
            for (String n : names) {
                byte[] b = n.getBytes(StandardCharsets.US_ASCII);
                list.write(0);
                u16(list, b.length);
                list.writeBytes(b);
            }
            u16(ext, 0); // server_name
            u16(ext, list.size() + 2);
            u16(ext, list.size());
            ext.writeBytes(list.toByteArray());
        }
        u16(ext, 43); // supported_versions: TLS 1.3
        u16(ext, 3);
        ext.write(2);
        u16(ext, 0x0304);
        ByteArrayOutputStream hello = new ByteArrayOutputStream();
        u16(hello, 0x0303);
        hello.writeBytes(new byte[32]);
        hello.write(0); // session id
        u16(hello, 2);
        u16(hello, 0x1301);
        hello.write(1);
        hello.write(0);
        u16(hello, ext.size());
        hello.writeBytes(ext.toByteArray());
        ByteArrayOutputStream hs = new ByteArrayOutputStream();
        hs.write(1);
        hs.write(hello.size() >>> 16);
        u16(hs, hello.size() & 0xffff);
        hs.writeBytes(hello.toByteArray());
        ByteArrayOutputStream rec = new ByteArrayOutputStream();
        rec.write(22);
        u16(rec, 0x0301);
        u16(rec, hs.size());
        rec.writeBytes(hs.toByteArray());
        return rec.toByteArray();
    }

    private static void u16(ByteArrayOutputStream o, int v) {
        o.write(v >>> 8);
        o.write(v & 0xff);
    }
}
