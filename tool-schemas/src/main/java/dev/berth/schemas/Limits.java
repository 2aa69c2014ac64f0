package dev.berth.schemas;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * The one catalogue of Berth's limits, read from {@code berth/limits.json}: every size, count and time a tool, the
 * engine or the transports enforce, with its unit and meaning. Code takes its numbers from here; the tool schemas keep
 * their own copies (clients read them) and {@code LimitsCatalogueTest} fails when one of them, a tool description or
 * {@code docs/limits.md} disagrees. Immutable and thread-safe; loaded once per class loader.
 */
public final class Limits {
    static final String RESOURCE = "berth/limits.json";
    /** The catalogue format this reader understands. */
    public static final int VERSION = 1;

    /** Where a tool schema repeats a limit: {@code at} is a JSON pointer into the tool's file ({@code berth/tools/<tool>.json}). */
    public record SchemaRef(String tool, String at) {}

    /**
     * Where a tool's text states a limit: the string at {@code at} in the tool's file must contain {@code text} with
     * {@code {}} replaced by the limit's {@link Limit#human() human form}.
     */
    public record Stated(String tool, String at, String text) {
        /** The text as it must appear for {@code limit}. */
        public String rendered(Limit limit) { return text.replace("{}", limit.human()); }
    }

    /** One limit: a dotted name, its value in {@code unit}, what it bounds, and where schemas and descriptions repeat it. */
    public record Limit(String name, long value, String unit, String meaning, List<SchemaRef> schema, List<Stated> stated) {
        public Limit {
            schema = List.copyOf(schema);
            stated = List.copyOf(stated);
        }

        /** The value as an {@code int}; refused (not truncated) when it does not fit. */
        public int intValue() {
            if (value > Integer.MAX_VALUE || value < Integer.MIN_VALUE) throw new ArithmeticException("limit " + name + " = " + value + " does not fit an int");
            return (int) value;
        }

        /** The value as people read it: whole KiB or MiB for byte counts ("2 MiB"), else the number. */
        public String human() {
            if (unit.equals("bytes") && value >= 1024 * 1024 && value % (1024 * 1024) == 0) return value / (1024 * 1024) + " MiB";
            if (unit.equals("bytes") && value >= 1024 && value % 1024 == 0) return value / 1024 + " KiB";
            return Long.toString(value);
        }
    }

    private static final Limits CATALOGUE = read();

    private final int version;
    private final Map<String, Limit> byName;

    private Limits(int version, Map<String, Limit> byName) {
        this.version = version;
        this.byName = byName;
    }

    /** The catalogue on the classpath. */
    public static Limits catalogue() { return CATALOGUE; }

    /** The value of limit {@code name}; an unknown name is a programming error and throws. */
    public static long value(String name) { return CATALOGUE.limit(name).value(); }

    /** The value of limit {@code name} as an {@code int}. */
    public static int intValue(String name) { return CATALOGUE.limit(name).intValue(); }

    public int version() { return version; }

    /** Every limit, in the catalogue's order. */
    public List<Limit> all() { return List.copyOf(byName.values()); }

    public Limit limit(String name) {
        Limit l = byName.get(name);
        if (l == null) throw new IllegalArgumentException("no limit '" + name + "' in " + RESOURCE);
        return l;
    }

    /** The catalogue as the markdown page {@code docs/limits.md} (generated: the test compares the file with this). */
    public String markdown() {
        StringBuilder sb = new StringBuilder();
        sb.append("# Limits\n\n")
                .append("Generated from `tool-schemas/src/main/resources/").append(RESOURCE).append("` (version ").append(version)
                .append(") by `dev.berth.schemas.Limits#markdown`; do not edit by hand. `LimitsCatalogueTest` fails when\n")
                .append("this page, a tool schema or a tool description disagrees with the catalogue; run it with\n")
                .append("`-Dberth.limits.regenerate=true` to rewrite this page after changing the catalogue.\n\n")
                .append("| name | value | unit | meaning |\n")
                .append("|---|---:|---|---|\n");
        for (Limit l : byName.values()) {
            String v = l.human().equals(Long.toString(l.value())) ? Long.toString(l.value()) : l.value() + " (" + l.human() + ")";
            sb.append("| `").append(l.name()).append("` | ").append(v).append(" | ").append(l.unit()).append(" | ")
                    .append(l.meaning().replace("|", "\\|")).append(" |\n");
        }
        return sb.toString();
    }

    private static Limits read() {
        try (InputStream in = Limits.class.getClassLoader().getResourceAsStream(RESOURCE)) {
            if (in == null) throw new IllegalStateException("missing resource " + RESOURCE);
            return parse(JsonMapper.builder().build().readTree(in));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + RESOURCE + ": " + e.getMessage(), e);
        }
    }

    static Limits parse(JsonNode root) {
        if (!"berth-limits".equals(root.path("format").asString(null))) throw new IllegalStateException(RESOURCE + " is not a berth-limits file");
        int version = root.path("version").asInt(0);
        if (version != VERSION) throw new IllegalStateException(RESOURCE + " is version " + version + "; this reader knows version " + VERSION);
        Map<String, Limit> byName = new LinkedHashMap<>();
        for (JsonNode n : root.path("limits").values()) {
            List<SchemaRef> schema = n.path("schema").valueStream()
                    .map(s -> new SchemaRef(s.path("tool").asString(), s.path("at").asString())).toList();
            List<Stated> stated = n.path("stated").valueStream()
                    .map(s -> new Stated(s.path("tool").asString(), s.path("at").asString("/description"), s.path("text").asString())).toList();
            Limit l = new Limit(n.path("name").asString(), n.path("value").asLong(), n.path("unit").asString(),
                    n.path("meaning").asString(), schema, stated);
            if (byName.put(l.name(), l) != null) throw new IllegalStateException(RESOURCE + " names limit '" + l.name() + "' twice");
        }
        return new Limits(version, java.util.Collections.unmodifiableMap(byName));
    }
}
