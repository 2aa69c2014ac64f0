package dev.berth.proxy.policy;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * Rewrites registry metadata so that hidden versions are not there: npm packuments ({@code versions}, {@code time},
 * {@code dist-tags} moved to the newest version left), PyPI JSON ({@code releases}, {@code info.version},
 * {@code urls}), PyPI Simple pages in PEP 503 HTML and PEP 691 JSON, and Maven {@code maven-metadata.xml}
 * ({@code versions}, {@code latest}, {@code release}). Which versions are hidden is the {@link Verdict}'s call. Pure
 * functions on decoded bodies; thread-safe.
 */
public final class MetadataFilter {
    private MetadataFilter() {}

    private static final ObjectMapper JSON = new ObjectMapper();

    /** Why a version is hidden (null: keep it). {@code published} is null when the metadata does not say. */
    @FunctionalInterface
    public interface Verdict {
        String hide(String version, Instant published);
    }

    public record Hidden(String version, String reason) {}

    /** The rewritten body (the input unchanged when nothing was hidden) and what was hidden. */
    public record Result(byte[] body, List<Hidden> hidden) {}

    static Instant parseTime(String s) {
        if (s == null || s.isEmpty()) return null;
        try {
            return Instant.parse(s);
        } catch (RuntimeException e) {
            try {
                return LocalDateTime.parse(s).toInstant(ZoneOffset.UTC); // PyPI's upload_time has no zone: UTC
            } catch (RuntimeException e2) {
                return null;
            }
        }
    }

    // ---- npm

    public static Map<String, Instant> npmTimes(JsonNode packument) {
        Map<String, Instant> m = new HashMap<>();
        JsonNode time = packument.path("time");
        for (var e : time.properties()) {
            if (e.getKey().equals("created") || e.getKey().equals("modified")) continue;
            Instant t = parseTime(e.getValue().asString(""));
            if (t != null) m.put(e.getKey(), t);
        }
        return m;
    }

    public static Result npm(byte[] body, Verdict verdict) {
        JsonNode root = JSON.readTree(body);
        if (!(root instanceof ObjectNode doc) || !(doc.get("versions") instanceof ObjectNode versions)) return new Result(body, List.of());
        Map<String, Instant> times = npmTimes(doc);
        List<Hidden> hidden = new ArrayList<>();
        for (String v : new ArrayList<>(versions.propertyNames())) {
            String why = verdict.hide(v, times.get(v));
            if (why != null) {
                hidden.add(new Hidden(v, why));
                versions.remove(v);
                if (doc.get("time") instanceof ObjectNode t) t.remove(v);
            }
        }
        if (hidden.isEmpty()) return new Result(body, hidden);
        List<String> hiddenVersions = hidden.stream().map(Hidden::version).toList();
        if (doc.get("dist-tags") instanceof ObjectNode tags) {
            String newest = newestStable(versions.propertyNames(), times);
            for (String tag : new ArrayList<>(tags.propertyNames())) {
                if (!hiddenVersions.contains(tags.path(tag).asString(""))) continue;
                if (tag.equals("latest") && newest != null) tags.put("latest", newest); else tags.remove(tag);
            }
        }
        return new Result(JSON.writeValueAsBytes(doc), hidden);
    }

    /** The newest version left that is not a pre-release (by version order; publish time breaks no ties here). */
    private static String newestStable(java.util.Collection<String> versions, Map<String, Instant> times) {
        String best = null;
        for (String v : versions) {
            if (v.contains("-")) continue;
            if (best == null || Advisories.compareVersions(v, best) > 0) best = v;
        }
        if (best != null) return best;
        for (String v : versions) if (best == null || Advisories.compareVersions(v, best) > 0) best = v;
        return best;
    }

    // ---- PyPI JSON API (/pypi/<name>/json)

    public static Map<String, Instant> pypiJsonTimes(JsonNode doc) {
        Map<String, Instant> m = new HashMap<>();
        for (var e : doc.path("releases").properties()) {
            Instant first = null;
            for (JsonNode f : e.getValue()) {
                Instant t = parseTime(f.path("upload_time_iso_8601").asString(f.path("upload_time").asString("")));
                if (t != null && (first == null || t.isBefore(first))) first = t;
            }
            if (first != null) m.put(e.getKey(), first);
        }
        return m;
    }

    public static Result pypiJson(byte[] body, Verdict verdict) {
        JsonNode root = JSON.readTree(body);
        if (!(root instanceof ObjectNode doc) || !(doc.get("releases") instanceof ObjectNode releases)) return new Result(body, List.of());
        Map<String, Instant> times = pypiJsonTimes(doc);
        List<Hidden> hidden = new ArrayList<>();
        for (String v : new ArrayList<>(releases.propertyNames())) {
            String why = verdict.hide(v, times.get(v));
            if (why != null) {
                hidden.add(new Hidden(v, why));
                releases.remove(v);
            }
        }
        if (hidden.isEmpty()) return new Result(body, hidden);
        if (doc.get("info") instanceof ObjectNode info && hidden.stream().anyMatch(h -> h.version().equals(info.path("version").asString("")))) {
            String newest = null;
            for (String v : releases.propertyNames()) {
                if (releases.get(v).isEmpty() || v.matches(".*[a-zA-Z].*")) continue;
                if (newest == null || Advisories.compareVersions(v, newest) > 0) newest = v;
            }
            if (newest != null) {
                info.put("version", newest);
                doc.set("urls", releases.get(newest).deepCopy());
            } else {
                doc.set("urls", doc.arrayNode());
            }
        }
        return new Result(JSON.writeValueAsBytes(doc), hidden);
    }

    // ---- PyPI Simple API (PEP 503 HTML, PEP 691 JSON)

    /** PEP 691 {@code upload-time} per version (earliest file), if every file carries one; else null. */
    public static Map<String, Instant> pypiSimpleJsonTimes(byte[] body) {
        JsonNode doc = JSON.readTree(body);
        Map<String, Instant> m = new HashMap<>();
        for (JsonNode f : doc.path("files")) {
            String[] nv = RegistryPaths.pypiFile(f.path("filename").asString(""));
            if (nv == null) continue;
            Instant t = parseTime(f.path("upload-time").asString(""));
            if (t == null) return null;
            m.merge(nv[1], t, (a, b) -> a.isBefore(b) ? a : b);
        }
        return m;
    }

    public static Result pypiSimpleJson(byte[] body, Map<String, Instant> times, Verdict verdict) {
        JsonNode root = JSON.readTree(body);
        if (!(root instanceof ObjectNode doc) || !(doc.get("files") instanceof ArrayNode files)) return new Result(body, List.of());
        Map<String, String> decided = new LinkedHashMap<>();
        ArrayNode kept = doc.arrayNode();
        for (JsonNode f : files) {
            String[] nv = RegistryPaths.pypiFile(f.path("filename").asString(""));
            String why = nv == null ? null : decided.computeIfAbsent(nv[1], v -> String.valueOf(verdict.hide(v, times.get(v))));
            if (why != null && !why.equals("null")) continue;
            kept.add(f);
        }
        List<Hidden> hidden = hiddenOf(decided);
        if (hidden.isEmpty()) return new Result(body, hidden);
        doc.set("files", kept);
        if (doc.get("versions") instanceof ArrayNode vs) {
            ArrayNode left = doc.arrayNode();
            for (JsonNode v : vs) if (hidden.stream().noneMatch(h -> h.version().equals(v.asString("")))) left.add(v);
            doc.set("versions", left);
        }
        return new Result(JSON.writeValueAsBytes(doc), hidden);
    }

    private static final Pattern ANCHOR = Pattern.compile("<a\\b[^>]*>([^<]*)</a>(\\s*<br\\s*/?>)?", Pattern.CASE_INSENSITIVE);

    public static Result pypiSimpleHtml(byte[] body, Map<String, Instant> times, Verdict verdict) {
        String html = new String(body, StandardCharsets.UTF_8);
        Map<String, String> decided = new LinkedHashMap<>();
        Matcher m = ANCHOR.matcher(html);
        StringBuilder out = new StringBuilder(html.length());
        while (m.find()) {
            String[] nv = RegistryPaths.pypiFile(m.group(1).trim());
            String why = nv == null ? null : decided.computeIfAbsent(nv[1], v -> String.valueOf(verdict.hide(v, times.get(v))));
            m.appendReplacement(out, why != null && !why.equals("null") ? "" : Matcher.quoteReplacement(m.group()));
        }
        m.appendTail(out);
        List<Hidden> hidden = hiddenOf(decided);
        return hidden.isEmpty() ? new Result(body, hidden) : new Result(out.toString().getBytes(StandardCharsets.UTF_8), hidden);
    }

    private static List<Hidden> hiddenOf(Map<String, String> decided) {
        List<Hidden> hidden = new ArrayList<>();
        decided.forEach((v, why) -> {
            if (!why.equals("null")) hidden.add(new Hidden(v, why));
        });
        return hidden;
    }

    // ---- Maven

    private static final Pattern VERSIONS = Pattern.compile("<versions>(.*?)</versions>", Pattern.DOTALL);
    private static final Pattern VERSION = Pattern.compile("\\s*<version>\\s*([^<\\s]+)\\s*</version>");

    /** The versions listed in a maven-metadata.xml, in file order (Maven lists them oldest first). */
    public static List<String> mavenVersions(byte[] body) {
        Matcher m = VERSIONS.matcher(new String(body, StandardCharsets.UTF_8));
        List<String> vs = new ArrayList<>();
        if (!m.find()) return vs;
        Matcher v = VERSION.matcher(m.group(1));
        while (v.find()) vs.add(v.group(1));
        return vs;
    }

    public static Result maven(byte[] body, Map<String, Instant> times, Verdict verdict) {
        String xml = new String(body, StandardCharsets.UTF_8);
        Matcher m = VERSIONS.matcher(xml);
        if (!m.find()) return new Result(body, List.of());
        List<Hidden> hidden = new ArrayList<>();
        List<String> kept = new ArrayList<>();
        Matcher v = VERSION.matcher(m.group(1));
        StringBuilder inner = new StringBuilder();
        while (v.find()) {
            String why = verdict.hide(v.group(1), times.get(v.group(1)));
            if (why != null) hidden.add(new Hidden(v.group(1), why)); else kept.add(v.group(1));
            v.appendReplacement(inner, why != null ? "" : Matcher.quoteReplacement(v.group()));
        }
        v.appendTail(inner);
        if (hidden.isEmpty()) return new Result(body, hidden);
        String out = xml.substring(0, m.start(1)) + inner + xml.substring(m.end(1));
        String newest = null;
        String newestRelease = null;
        for (String k : kept) {
            newest = k;
            if (!k.endsWith("-SNAPSHOT")) newestRelease = k;
        }
        out = replaceElement(out, "latest", newest);
        out = replaceElement(out, "release", newestRelease);
        return new Result(out.getBytes(StandardCharsets.UTF_8), hidden);
    }

    private static String replaceElement(String xml, String name, String value) {
        Pattern p = Pattern.compile("\\s*<" + name + ">[^<]*</" + name + ">");
        Matcher m = p.matcher(xml);
        if (!m.find()) return xml;
        if (value == null) return xml.substring(0, m.start()) + xml.substring(m.end());
        String ws = m.group().substring(0, m.group().indexOf('<'));
        return xml.substring(0, m.start()) + ws + "<" + name + ">" + value + "</" + name + ">" + xml.substring(m.end());
    }
}
