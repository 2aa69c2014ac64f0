package dev.berth.engine.audit;

import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import tools.jackson.core.JacksonException;
import tools.jackson.core.StreamReadFeature;
import tools.jackson.databind.json.JsonMapper;

/**
 * The canonical JSON encoding that audit records and receipts are hashed and signed over: object keys sorted by
 * UTF-16 code unit order (all our keys are ASCII, so this is byte order), no insignificant whitespace, strings as
 * raw UTF-8 with only {@code "}, {@code \}, control characters and unpaired surrogates escaped, integers in plain
 * decimal. Floating-point numbers are refused: they have no single spelling, so they would make a hash depend on
 * the writer. Stateless and thread-safe.
 *
 * <p>Decoding goes through Jackson with duplicate keys refused; a line is canonical when encoding what was decoded
 * gives back the same bytes, which is how the verifier notices an edit that left the JSON valid.
 */
public final class Canonical {
    private static final JsonMapper JSON = JsonMapper.builder().enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION).build();

    private Canonical() {}

    /** The canonical bytes of a value made of maps, lists, strings, integers, booleans and nulls. */
    public static byte[] encode(Object value) {
        StringBuilder sb = new StringBuilder(256);
        write(sb, value);
        return sb.toString().getBytes(StandardCharsets.UTF_8);
    }

    /** Parses one JSON object; throws {@link IllegalArgumentException} naming what is wrong. */
    @SuppressWarnings("unchecked")
    public static Map<String, Object> decodeObject(byte[] json) {
        Object v;
        try {
            v = JSON.readValue(json, Object.class);
        } catch (JacksonException e) {
            throw new IllegalArgumentException("not valid JSON: " + e.getOriginalMessage());
        }
        if (!(v instanceof Map<?, ?> m)) throw new IllegalArgumentException("not a JSON object");
        return (Map<String, Object>) m;
    }

    /** Hex SHA-256 of the bytes. */
    public static String sha256(byte[] bytes) {
        return HexFormat.of().formatHex(digest().digest(bytes));
    }

    /** A fresh SHA-256 digest. */
    public static MessageDigest newSha256() {
        return digest();
    }

    static MessageDigest digest() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("the JDK has no SHA-256", e);
        }
    }

    private static void write(StringBuilder sb, Object v) {
        switch (v) {
            case null -> sb.append("null");
            case Boolean b -> sb.append(b);
            case Integer i -> sb.append(i);
            case Long l -> sb.append(l);
            case Short s -> sb.append(s);
            case BigInteger b -> sb.append(b);
            case CharSequence s -> string(sb, s.toString());
            case Map<?, ?> m -> {
                List<String> keys = new ArrayList<>(m.size());
                for (Object k : m.keySet()) {
                    if (!(k instanceof String s)) throw new IllegalArgumentException("object key " + k + " is not a string");
                    keys.add(s);
                }
                keys.sort(null);
                sb.append('{');
                for (int i = 0; i < keys.size(); i++) {
                    if (i > 0) sb.append(',');
                    string(sb, keys.get(i));
                    sb.append(':');
                    write(sb, m.get(keys.get(i)));
                }
                sb.append('}');
            }
            case Collection<?> c -> {
                sb.append('[');
                boolean first = true;
                for (Object o : c) {
                    if (!first) sb.append(',');
                    first = false;
                    write(sb, o);
                }
                sb.append(']');
            }
            case Enum<?> e -> string(sb, e.name().toLowerCase(java.util.Locale.ROOT));
            default -> throw new IllegalArgumentException("cannot encode " + v.getClass().getSimpleName()
                    + " canonically (only maps, lists, strings, integers, booleans and null)");
        }
    }

    private static void string(StringBuilder sb, String s) {
        sb.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> sb.append("\\\"");
                case '\\' -> sb.append("\\\\");
                case '\n' -> sb.append("\\n");
                case '\r' -> sb.append("\\r");
                case '\t' -> sb.append("\\t");
                case '\b' -> sb.append("\\b");
                case '\f' -> sb.append("\\f");
                default -> {
                    if (c < 0x20 || c == 0x7f) {
                        unicode(sb, c);
                    } else if (Character.isHighSurrogate(c) && i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
                        sb.append(c).append(s.charAt(++i));
                    } else if (Character.isSurrogate(c)) {
                        unicode(sb, c); // unpaired: raw it would not survive UTF-8
                    } else {
                        sb.append(c);
                    }
                }
            }
        }
        sb.append('"');
    }

    private static void unicode(StringBuilder sb, char c) {
        sb.append(String.format("\\u%04x", (int) c));
    }
}
