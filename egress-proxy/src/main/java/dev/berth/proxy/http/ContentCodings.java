package dev.berth.proxy.http;

import dev.berth.proxy.net.HostNames;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.Locale;
import java.util.zip.GZIPInputStream;
import java.util.zip.InflaterInputStream;

/**
 * Decodes a response body by its {@code Content-Encoding} ({@code gzip}, {@code x-gzip}, {@code deflate}, {@code br},
 * {@code identity}, or a list of them applied in order), bounded: a body that decodes to more than {@code max} bytes
 * is refused rather than buffered (a small compressed body can expand enormously). Stateless.
 */
public final class ContentCodings {
    private ContentCodings() {}

    public static byte[] decode(String contentEncoding, byte[] body, int max) throws IOException {
        if (contentEncoding == null || contentEncoding.isBlank()) return body;
        String[] codings = contentEncoding.toLowerCase(Locale.ROOT).split(",");
        byte[] b = body;
        for (int i = codings.length - 1; i >= 0; i--) { // listed in the order they were applied
            String c = codings[i].trim();
            InputStream in = switch (c) {
                case "identity", "" -> null;
                case "gzip", "x-gzip" -> new GZIPInputStream(new ByteArrayInputStream(b));
                case "deflate" -> new InflaterInputStream(new ByteArrayInputStream(b));
                case "br" -> new org.brotli.dec.BrotliInputStream(new ByteArrayInputStream(b));
                default -> throw new IOException("unsupported Content-Encoding '" + HostNames.printable(c) + "'");
            };
            if (in == null) continue;
            try (in) {
                b = in.readNBytes(max + 1);
            }
            if (b.length > max) throw new IOException("decoded body larger than " + max + " bytes (maxMetadataBytes)");
        }
        return b;
    }
}
