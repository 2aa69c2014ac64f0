package dev.berth.mcp.tools;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Function;

/**
 * The text mirror of a structured result (the JSON text MCP asks servers to send next to {@code structuredContent}
 * for clients that read only text). It repeats small results as they are; it never repeats binary content
 * (base64 means nothing to a reader of text) and, when the result's JSON is larger than {@link #MAX_CHARS}, it
 * summarises every long string field instead of repeating it, so a result never travels twice at full size.
 * Stateless.
 */
public final class Mirror {
    /** Largest mirror repeated as is; about 64 KiB, which an agent reading text can still take in. */
    public static final int MAX_CHARS = 64 * 1024;
    /** String fields shorter than this stay in a summarised mirror. */
    static final int SHORT_FIELD = 1024;

    private Mirror() {}

    public static String of(Map<String, Object> result, Function<Object, String> toJson) {
        boolean binary = "base64".equals(result.get("encoding")) && result.get("content") instanceof String;
        if (!binary) {
            String full = toJson.apply(result);
            if (full.length() <= MAX_CHARS) return full;
        }
        Map<String, Object> m = new LinkedHashMap<>(result);
        for (Map.Entry<String, Object> e : m.entrySet()) {
            if (e.getValue() instanceof String s && (s.length() >= SHORT_FIELD || (binary && e.getKey().equals("content")))) {
                e.setValue("[" + s.length() + " characters" + (binary && e.getKey().equals("content") ? " of base64" : "")
                        + ", not repeated in this text: see structuredContent." + e.getKey() + "]");
            }
        }
        return toJson.apply(m);
    }
}
