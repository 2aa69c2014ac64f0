package dev.berth.mcp.jsonrpc;

import java.io.IOException;
import java.io.InputStream;
import java.util.Arrays;
import tools.jackson.core.JsonParser;
import tools.jackson.core.JsonToken;
import tools.jackson.databind.json.JsonMapper;

/**
 * Splits a byte stream into newline-terminated messages of at most {@code max} bytes, never holding more than that in
 * memory. A longer line is read to its end and discarded; on the way its top-level {@code "id"} is picked out with a
 * streaming parser (clients often put the id after a large params object) so its refusal can name the request. A
 * trailing {@code \r} is dropped; a last line without a newline is still a message. Not thread-safe: one reader thread.
 */
public final class LineReader {
    private static final JsonMapper JSON = JsonMapper.builder().build();

    /** One line: {@code bytes[0..length)}, or for an oversize line its full size and (if found) its id. */
    public record Line(byte[] bytes, int length, long oversize, Object id) {
        public boolean tooLarge() { return oversize > 0; }
    }

    private final InputStream in;
    private final int max;
    private final byte[] buf = new byte[64 * 1024];
    private int pos;
    private int lim;
    private byte[] line = new byte[8 * 1024];

    public LineReader(InputStream in, int max) {
        this.in = in;
        this.max = max;
    }

    /** The next line, or null at end of input. */
    public Line next() throws IOException {
        int n = 0;
        boolean any = false;
        while (true) {
            if (pos == lim && !fill()) {
                return any ? finish(n) : null;
            }
            any = true;
            int start = pos;
            while (pos < lim && buf[pos] != '\n') pos++;
            int chunk = pos - start;
            if (n + chunk > max) return oversize(n, start);
            if (n + chunk > line.length) line = Arrays.copyOf(line, Math.min(max, Math.max(line.length * 2, n + chunk)));
            System.arraycopy(buf, start, line, n, chunk);
            n += chunk;
            if (pos < lim) { // at the newline
                pos++;
                return finish(n);
            }
        }
    }

    private Line finish(int n) {
        if (n > 0 && line[n - 1] == '\r') n--;
        return new Line(line, n, 0, null);
    }

    private boolean fill() throws IOException {
        int r = in.read(buf, 0, buf.length);
        if (r <= 0) return false;
        pos = 0;
        lim = r;
        return true;
    }

    /** Reads the rest of an oversize line through a streaming parser looking for its id, then to its newline. */
    private Line oversize(int kept, int chunkStart) throws IOException {
        long[] total = {kept};
        pos = chunkStart;
        InputStream rest = new InputStream() {
            private int prefix = 0;
            private boolean ended;

            @Override
            public int read() throws IOException {
                byte[] one = new byte[1];
                return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
            }

            @Override
            public int read(byte[] b, int off, int len) throws IOException {
                if (prefix < kept) {
                    int k = Math.min(len, kept - prefix);
                    System.arraycopy(line, prefix, b, off, k);
                    prefix += k;
                    return k;
                }
                if (ended || (pos == lim && !fill())) {
                    ended = true;
                    return -1;
                }
                int start = pos;
                int end = Math.min(lim, pos + len);
                while (pos < end && buf[pos] != '\n') pos++;
                int k = pos - start;
                System.arraycopy(buf, start, b, off, k);
                total[0] += k;
                if (pos < lim && buf[pos] == '\n') {
                    pos++;
                    ended = true;
                }
                return k == 0 && ended ? -1 : k;
            }
        };
        Object id = topLevelId(rest);
        byte[] scratch = new byte[8192];
        while (rest.read(scratch, 0, scratch.length) >= 0) {
            // drain: the parser stopped early (found the id, or the line is not JSON)
        }
        return new Line(line, 0, total[0], id);
    }

    /** The top-level "id" of a JSON object read from {@code in}, or null when it has none or is not JSON. */
    public static Object topLevelId(InputStream in) {
        try (JsonParser p = JSON.createParser(in)) {
            if (p.nextToken() != JsonToken.START_OBJECT) return null;
            while (p.nextToken() == JsonToken.PROPERTY_NAME) {
                String name = p.currentName();
                JsonToken v = p.nextToken();
                if ("id".equals(name)) {
                    if (v == JsonToken.VALUE_STRING) return p.getString();
                    if (v == JsonToken.VALUE_NUMBER_INT) return p.getLongValue();
                    return null;
                }
                p.skipChildren();
            }
        } catch (RuntimeException e) { // JacksonException included
            // not JSON (or nested beyond the parser's bound): the refusal carries id null
        }
        return null;
    }
}
