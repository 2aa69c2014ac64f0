package dev.berth.proxy;

import dev.berth.proxy.net.HostNames;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Consumer;
import tools.jackson.databind.JsonNode;

/**
 * The key rules of Berth's config files, shared by the egress section and the operator file: keys are snake_case;
 * an unknown key is refused with the closest valid key suggested (edit distance); in the egress section the old
 * camelCase spelling of a key is still accepted, with one deprecation warning per key per load. Stateless apart from
 * the per-load {@link Deprecations}.
 */
public final class ConfigKeys {
    private ConfigKeys() {}

    /** {@code maxTunnelsPerWorkspace} -> {@code max_tunnels_per_workspace}; a snake_case key is returned as is. */
    public static String snakeCase(String key) {
        StringBuilder sb = new StringBuilder(key.length() + 8);
        for (int i = 0; i < key.length(); i++) {
            char c = key.charAt(i);
            if (Character.isUpperCase(c)) {
                if (i > 0) sb.append('_');
                sb.append(Character.toLowerCase(c));
            } else {
                sb.append(c);
            }
        }
        return sb.toString();
    }

    /** {@code from_env} -> {@code fromEnv}: the old spelling of an egress key. */
    static String camelCase(String key) {
        StringBuilder sb = new StringBuilder(key.length());
        for (int i = 0; i < key.length(); i++) {
            char c = key.charAt(i);
            if (c == '_' && i + 1 < key.length()) sb.append(Character.toUpperCase(key.charAt(++i)));
            else sb.append(c);
        }
        return sb.toString();
    }

    /** The valid key closest to {@code key} by edit distance (of its snake_case form), or null when none is close. */
    public static String closest(String key, Collection<String> valid) {
        String k = snakeCase(key);
        int limit = Math.max(2, k.length() / 3);
        String best = null;
        int bestDistance = Integer.MAX_VALUE;
        for (String v : new TreeSet<>(valid)) {
            int d = distance(k, v);
            if (d <= limit && d < bestDistance) {
                best = v;
                bestDistance = d;
            }
        }
        return best;
    }

    /** "unknown key 'alow' in config; did you mean 'allow'? (allowed: [...])", the suggestion left out when none is close. */
    public static String unknownKey(String key, String where, Collection<String> valid) {
        String near = closest(key, valid);
        return "unknown key '" + HostNames.printable(key) + "' in " + where + (near == null ? "" : "; did you mean '" + near + "'?")
                + " (allowed: " + new TreeSet<>(valid) + ")";
    }

    /** Levenshtein distance. */
    static int distance(String a, String b) {
        int[] prev = new int[b.length() + 1];
        int[] cur = new int[b.length() + 1];
        for (int j = 0; j <= b.length(); j++) prev[j] = j;
        for (int i = 1; i <= a.length(); i++) {
            cur[0] = i;
            for (int j = 1; j <= b.length(); j++) {
                int sub = prev[j - 1] + (a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1);
                cur[j] = Math.min(sub, Math.min(prev[j] + 1, cur[j - 1] + 1));
            }
            int[] t = prev;
            prev = cur;
            cur = t;
        }
        return prev[b.length()];
    }

    /** The deprecation warnings of one load: each old key is reported once, however often it appears. Not thread-safe. */
    public static final class Deprecations {
        private final Set<String> seen = new LinkedHashSet<>();
        private final Consumer<String> sink;

        public Deprecations(Consumer<String> sink) { this.sink = sink; }

        /** Has this load met an old spelling? Then the file is in the old style, and errors name absent keys that way. */
        boolean any() { return !seen.isEmpty(); }

        void warn(String oldKey, String newKey) {
            if (seen.add(oldKey)) sink.accept("egress key '" + oldKey + "' is deprecated; use '" + newKey + "'");
        }
    }

    /**
     * One JSON object of the egress section read under the rules: values by their snake_case key, and each key's name
     * as the operator wrote it, so that an error names what is in the file.
     */
    static final class Section {
        private final String where;
        private final Deprecations deprecations;
        private final Map<String, JsonNode> values = new LinkedHashMap<>();
        private final Map<String, String> written = new LinkedHashMap<>();

        private Section(String where, Deprecations deprecations) {
            this.where = where;
            this.deprecations = deprecations;
        }

        /**
         * Reads {@code obj} (an object) at {@code where}: keys in {@code allowed} as they are, their camelCase spelling
         * with a warning, anything else refused.
         */
        static Section of(JsonNode obj, String where, Set<String> allowed, Deprecations deprecations) throws ConfigException {
            Section s = new Section(where, deprecations);
            for (Map.Entry<String, JsonNode> e : obj.properties()) {
                String key = e.getKey();
                String canonical = allowed.contains(key) ? key : snakeCase(key);
                if (!allowed.contains(canonical)) throw new ConfigException(unknownKey(key, where, allowed));
                if (s.written.containsKey(canonical)) {
                    throw new ConfigException("both '" + s.written.get(canonical) + "' and '" + key + "' given in " + where
                            + "; keep '" + canonical + "'");
                }
                if (!canonical.equals(key)) deprecations.warn(key, canonical);
                s.values.put(canonical, e.getValue());
                s.written.put(canonical, key);
            }
            return s;
        }

        JsonNode get(String key) { return values.get(key); }

        /** The key as written in the file; when absent, as the file's style would spell it. */
        String name(String key) { return written.getOrDefault(key, deprecations.any() ? camelCase(key) : key); }

        /** {@code where.key}, with the key as written. */
        String path(String key) { return where + "." + name(key); }

        Set<String> keys() { return values.keySet(); }
    }
}
