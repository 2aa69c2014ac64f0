package dev.berth.mcp;

import dev.berth.engine.Engine;
import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.EngineException.Kind;
import dev.berth.engine.api.FileContent;
import dev.berth.engine.api.FileListing;
import dev.berth.engine.api.Tenant;
import dev.berth.mcp.tools.Args;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** read_file, write_file, list_files: binary-safe (UTF-8 text or base64), size-bounded, paths inside the workspace. */
final class FileTools {
    /** Largest write per call (decoded), as write_file's schema says; a request carrying it fits the message limit. */
    static final int MAX_WRITE_BYTES = dev.berth.schemas.Limits.intValue("write_file.content_bytes_max");
    /** Bytes one read returns when the call names no max_bytes. */
    static final int DEFAULT_READ_BYTES = dev.berth.schemas.Limits.intValue("read_file.max_bytes_default");
    private final Engine engine;

    FileTools(Engine engine) { this.engine = engine; }

    Map<String, Object> read(Tenant t, Args a) throws EngineException {
        Integer offset = a.integer("offset");
        Integer max = a.integer("max_bytes");
        FileContent c = engine.readFile(t, a.requiredString("workspace"), a.requiredString("path"),
                offset == null ? 0 : offset, max == null ? DEFAULT_READ_BYTES : max);
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("workspace", a.requiredString("workspace"));
        m.put("path", c.path());
        m.put("size", c.size());
        m.put("offset", c.offset());
        m.put("bytes", c.data().length);
        m.put("truncated", c.truncated());
        m.put("next_offset", c.offset() + c.data().length);
        String text = textIfCompact(c.data());
        m.put("encoding", text != null ? "utf-8" : "base64");
        m.put("content", text != null ? text : Base64.getEncoder().encodeToString(c.data()));
        m.put("mode", String.format("%04o", c.mode() & 07777));
        return m;
    }

    Map<String, Object> write(Tenant t, Args a) throws EngineException {
        String encoding = a.string("encoding");
        String content = a.requiredString("content");
        byte[] data;
        if (encoding == null || encoding.equals("utf-8")) {
            data = content.getBytes(StandardCharsets.UTF_8);
        } else if (encoding.equals("base64")) {
            try {
                data = Base64.getDecoder().decode(content);
            } catch (IllegalArgumentException e) {
                throw new EngineException(Kind.INVALID_ARGUMENT, "content is not valid base64: " + e.getMessage());
            }
        } else {
            throw new EngineException(Kind.INVALID_ARGUMENT, "encoding '" + encoding + "' is not one of utf-8, base64");
        }
        if (data.length > MAX_WRITE_BYTES) {
            throw new EngineException(Kind.INVALID_ARGUMENT, "content is " + data.length + " bytes; at most " + MAX_WRITE_BYTES
                    + " bytes per call: write the rest with append: true");
        }
        String mode = a.string("mode");
        Integer m = null;
        if (mode != null) {
            try {
                m = Integer.parseInt(mode, 8);
            } catch (NumberFormatException e) {
                throw new EngineException(Kind.INVALID_ARGUMENT, "mode '" + mode + "' is not an octal file mode such as 0644");
            }
        }
        boolean append = a.bool("append", false);
        long n = engine.writeFile(t, a.requiredString("workspace"), a.requiredString("path"), data, append, m);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("workspace", a.requiredString("workspace"));
        out.put("path", dev.berth.engine.Engine.resolvePath(a.requiredString("path")));
        out.put("bytes_written", n);
        out.put("appended", append);
        return out;
    }

    Map<String, Object> list(Tenant t, Args a) throws EngineException {
        FileListing l = engine.listFiles(t, a.requiredString("workspace"), a.string("path"));
        List<Map<String, Object>> entries = l.entries().stream().map(e -> {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("name", e.name());
            m.put("type", e.type());
            m.put("size", e.size());
            m.put("mode", String.format("%04o", e.mode()));
            m.put("modified", Instant.ofEpochSecond(e.modifiedEpochSeconds()).toString());
            return m;
        }).toList();
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("workspace", a.requiredString("workspace"));
        m.put("path", l.path());
        m.put("entries", entries);
        m.put("truncated", l.truncated());
        return m;
    }

    /**
     * The text if {@code b} is UTF-8 text that JSON escaping at most doubles, else null (the caller sends base64). So
     * the content of a read never takes more than twice max_bytes on the wire, whatever the file holds (a control
     * character escapes to six bytes; a newline-heavy text file stays text).
     */
    static String textIfCompact(byte[] b) {
        String text = utf8(b);
        if (text == null) return null;
        long escaped = 0;
        for (int i = 0; i < text.length(); i++) {
            char ch = text.charAt(i);
            escaped += ch == '"' || ch == '\\' || ch == '\n' || ch == '\t' || ch == '\r' ? 2 : ch < 0x20 ? 6 : ch < 0x80 ? 1 : ch < 0x800 ? 2 : 3;
        }
        return escaped <= 2L * b.length ? text : null;
    }

    /** The text if {@code b} is valid UTF-8 without NUL bytes, else null (the caller sends base64). */
    static String utf8(byte[] b) {
        for (byte x : b) if (x == 0) return null;
        try {
            return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(b)).toString();
        } catch (CharacterCodingException e) {
            return null;
        }
    }
}
