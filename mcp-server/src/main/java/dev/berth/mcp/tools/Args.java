package dev.berth.mcp.tools;

import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.EngineException.Kind;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Typed access to a tool call's arguments with errors that name the argument, the expected type and the value
 * received. The SDK validates arguments against the input schema first; this is the second line for calls that get
 * past it (and for engine-level rules the schema cannot express).
 */
public final class Args {
    private final Map<String, Object> raw;

    public Args(Map<String, Object> raw) { this.raw = raw == null ? Map.of() : raw; }

    public String string(String name) throws EngineException {
        Object v = raw.get(name);
        if (v == null) return null;
        if (v instanceof String s) return s;
        throw wrongType(name, "a string", v);
    }

    public String requiredString(String name) throws EngineException {
        String s = string(name);
        if (s == null) throw new EngineException(Kind.INVALID_ARGUMENT, "argument '" + name + "' is required");
        return s;
    }

    public Integer integer(String name) throws EngineException {
        Object v = raw.get(name);
        if (v == null) return null;
        if (v instanceof Number n && n.doubleValue() == Math.rint(n.doubleValue()) && Math.abs(n.doubleValue()) < Integer.MAX_VALUE) {
            return n.intValue();
        }
        throw wrongType(name, "an integer", v);
    }

    /** A whole number up to 2^53 (what a JSON number holds exactly), or null when absent. */
    public Long wholeNumber(String name) throws EngineException {
        Object v = raw.get(name);
        if (v == null) return null;
        if (v instanceof Number n && n.doubleValue() == Math.rint(n.doubleValue()) && Math.abs(n.doubleValue()) < (double) (1L << 53)) {
            return n.longValue();
        }
        throw wrongType(name, "an integer", v);
    }

    /** A terminal size {cols, rows} (range checked by the engine), or null when absent. */
    public dev.berth.engine.api.RunRequest.Terminal size(String name) throws EngineException {
        Object v = raw.get(name);
        if (v == null) return null;
        if (!(v instanceof Map<?, ?> m) || !m.keySet().equals(java.util.Set.of("cols", "rows"))) throw wrongType(name, "an object {cols, rows}", v);
        @SuppressWarnings("unchecked") Args inner = new Args((Map<String, Object>) m);
        return new dev.berth.engine.api.RunRequest.Terminal(inner.integer("cols"), inner.integer("rows"));
    }

    public boolean bool(String name, boolean dflt) throws EngineException {
        Object v = raw.get(name);
        if (v == null) return dflt;
        if (v instanceof Boolean b) return b;
        throw wrongType(name, "true or false", v);
    }

    public Map<String, String> stringMap(String name) throws EngineException {
        Object v = raw.get(name);
        if (v == null) return Map.of();
        if (!(v instanceof Map<?, ?> m)) throw wrongType(name, "an object of strings", v);
        Map<String, String> out = new LinkedHashMap<>();
        for (var e : m.entrySet()) {
            if (!(e.getValue() instanceof String s)) throw wrongType(name + "." + e.getKey(), "a string", e.getValue());
            out.put(String.valueOf(e.getKey()), s);
        }
        return out;
    }

    public java.util.List<String> stringList(String name) throws EngineException {
        Object v = raw.get(name);
        if (v == null) return null;
        if (!(v instanceof java.util.List<?> l)) throw wrongType(name, "an array of strings", v);
        java.util.List<String> out = new java.util.ArrayList<>();
        for (Object o : l) {
            if (!(o instanceof String s)) throw wrongType(name + "[]", "a string", o);
            out.add(s);
        }
        return out;
    }

    public Map<String, Object> object(String name) throws EngineException {
        Object v = raw.get(name);
        if (v == null) return null;
        if (v instanceof Map<?, ?> m) {
            @SuppressWarnings("unchecked") Map<String, Object> mm = (Map<String, Object>) m;
            return mm;
        }
        throw wrongType(name, "an object", v);
    }

    private static EngineException wrongType(String name, String expected, Object v) {
        String shown = v instanceof String s ? "\"" + (s.length() > 40 ? s.substring(0, 40) + "..." : s) + "\"" : String.valueOf(v);
        return new EngineException(Kind.INVALID_ARGUMENT, "argument '" + name + "' must be " + expected + ", got " + shown);
    }
}
