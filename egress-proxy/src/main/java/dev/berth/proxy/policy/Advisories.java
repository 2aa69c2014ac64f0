package dev.berth.proxy.policy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Stream;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;

/**
 * A local advisory feed in OSV format (an operator-supplied file or a directory of {@code *.json} files, each one OSV
 * record or an array of them): the package versions it lists as malicious are refused by the registry rules, with the
 * advisory id, and hidden from registry metadata.
 *
 * <p>Only malicious-package advisories are enforced: records whose id or one of whose aliases starts with {@code MAL-}
 * (the OpenSSF malicious-packages feed uses these). Vulnerability advisories (CVE, GHSA without a MAL alias) are not a
 * reason to refuse a download. Ecosystems {@code npm}, {@code PyPI} and {@code Maven}; for each affected package the
 * explicit {@code versions} list and {@code ranges} ({@code introduced} / {@code fixed} / {@code last_affected} events;
 * SEMVER and ECOSYSTEM ranges are compared with {@link #compareVersions}, a generic dotted-numeric order that is exact
 * for ordinary release numbers but not for every PEP 440 or Maven qualifier). Loaded once at start; immutable and
 * thread-safe.
 */
public final class Advisories {
    /** Malicious versions per ecosystem and package name (normalized per ecosystem). */
    private final Map<String, List<Affected>> byPackage;
    private final int records;

    private record Affected(String id, List<String> versions, List<List<String[]>> ranges) {}

    private Advisories(Map<String, List<Affected>> byPackage, int records) {
        this.byPackage = byPackage;
        this.records = records;
    }

    /** No advisories. */
    public static Advisories none() {
        return new Advisories(Map.of(), 0);
    }

    /** How many malicious-package records were loaded. */
    public int size() {
        return records;
    }

    /**
     * Loads a file or a directory of OSV JSON files.
     *
     * @throws IllegalArgumentException naming the file and what is wrong with it
     */
    public static Advisories load(Path path) {
        List<Path> files = new ArrayList<>();
        if (Files.isDirectory(path)) {
            try (Stream<Path> s = Files.walk(path)) {
                s.filter(p -> p.toString().endsWith(".json") && Files.isRegularFile(p)).sorted().forEach(files::add);
            } catch (IOException e) {
                throw new IllegalArgumentException("advisories: cannot list " + path + " (" + e.getClass().getSimpleName() + ")");
            }
        } else if (Files.isRegularFile(path)) {
            files.add(path);
        } else {
            throw new IllegalArgumentException("advisories: " + path + " is neither a file nor a directory of OSV JSON files");
        }
        Map<String, List<Affected>> map = new HashMap<>();
        int n = 0;
        ObjectMapper json = new ObjectMapper();
        for (Path f : files) {
            JsonNode root;
            try {
                if (Files.size(f) > 64L << 20) throw new IllegalArgumentException("advisories: " + f + " is larger than 64 MiB");
                root = json.readTree(f.toFile());
            } catch (IOException | RuntimeException e) {
                if (e instanceof IllegalArgumentException iae) throw iae;
                throw new IllegalArgumentException("advisories: " + f + " is not JSON (" + e.getClass().getSimpleName() + ")");
            }
            List<JsonNode> recs = new ArrayList<>();
            if (root.isArray()) root.forEach(recs::add); else recs.add(root);
            for (JsonNode r : recs) {
                if (!r.isObject() || !r.path("id").isString()) {
                    throw new IllegalArgumentException("advisories: " + f + " holds a record without an \"id\" (not OSV)");
                }
                String id = r.get("id").stringValue();
                if (!malicious(r)) continue;
                n++;
                for (JsonNode a : r.path("affected")) {
                    String eco = a.path("package").path("ecosystem").asString("");
                    String name = a.path("package").path("name").asString("");
                    RegistryRule.Kind kind = ecosystem(eco);
                    if (kind == null || name.isEmpty()) continue;
                    List<String> versions = new ArrayList<>();
                    for (JsonNode v : a.path("versions")) versions.add(v.asString());
                    List<List<String[]>> ranges = new ArrayList<>();
                    for (JsonNode range : a.path("ranges")) {
                        String type = range.path("type").asString("");
                        if (type.equals("GIT")) continue;
                        List<String[]> events = new ArrayList<>();
                        for (JsonNode ev : range.path("events")) {
                            for (String k : List.of("introduced", "fixed", "last_affected", "limit")) {
                                if (ev.has(k)) events.add(new String[] {k, ev.get(k).asString()});
                            }
                        }
                        ranges.add(events);
                    }
                    map.computeIfAbsent(key(kind, name), k -> new ArrayList<>()).add(new Affected(id, List.copyOf(versions), List.copyOf(ranges)));
                }
            }
        }
        return new Advisories(Map.copyOf(map), n);
    }

    private static boolean malicious(JsonNode r) {
        if (r.get("id").stringValue().startsWith("MAL-")) return true;
        for (JsonNode a : r.path("aliases")) if (a.asString("").startsWith("MAL-")) return true;
        return false;
    }

    private static RegistryRule.Kind ecosystem(String eco) {
        return switch (eco.toLowerCase(Locale.ROOT)) {
            case "npm" -> RegistryRule.Kind.NPM;
            case "pypi" -> RegistryRule.Kind.PYPI;
            case "maven" -> RegistryRule.Kind.MAVEN;
            default -> null;
        };
    }

    private static String key(RegistryRule.Kind kind, String name) {
        return kind.name() + " " + RegistryPaths.normalizeName(kind, name);
    }

    /** The id of an advisory listing this version as malicious, or null. */
    public String malicious(RegistryRule.Kind kind, String pkg, String version) {
        List<Affected> list = byPackage.get(key(kind, pkg));
        if (list == null) return null;
        for (Affected a : list) {
            if (a.versions.contains(version)) return a.id;
            for (List<String[]> events : a.ranges) if (inRange(events, version)) return a.id;
        }
        return null;
    }

    /** OSV range semantics: sorted events; affected from an "introduced" up to a "fixed" (exclusive) or "last_affected". */
    private static boolean inRange(List<String[]> events, String version) {
        boolean affected = false;
        for (String[] e : events) {
            switch (e[0]) {
                case "introduced" -> {
                    if (e[1].equals("0") || compareVersions(version, e[1]) >= 0) affected = true;
                }
                case "fixed", "limit" -> {
                    if (affected && compareVersions(version, e[1]) < 0) return true;
                    if (compareVersions(version, e[1]) >= 0) affected = false;
                }
                case "last_affected" -> {
                    if (affected && compareVersions(version, e[1]) <= 0) return true;
                    if (compareVersions(version, e[1]) > 0) affected = false;
                }
                default -> { }
            }
        }
        return affected;
    }

    /**
     * Generic version order: split on '.', '-', '+' and '_'; numeric parts compare as numbers and sort after text
     * parts at the same position; a version that is a prefix of another with a text (pre-release) part next sorts
     * after it ({@code 1.0.0 > 1.0.0-rc1}), with a numeric part next before it ({@code 1.0 < 1.0.1}).
     */
    static int compareVersions(String a, String b) {
        String[] x = a.split("[.\\-+_]");
        String[] y = b.split("[.\\-+_]");
        int n = Math.max(x.length, y.length);
        for (int i = 0; i < n; i++) {
            if (i >= x.length) return y[i].matches("\\d+") ? -1 : 1;
            if (i >= y.length) return x[i].matches("\\d+") ? 1 : -1;
            boolean nx = x[i].matches("\\d{1,18}");
            boolean ny = y[i].matches("\\d{1,18}");
            int c;
            if (nx && ny) c = Long.compare(Long.parseLong(x[i]), Long.parseLong(y[i]));
            else if (nx) c = 1;
            else if (ny) c = -1;
            else c = x[i].compareToIgnoreCase(y[i]);
            if (c != 0) return c;
        }
        return 0;
    }
}
