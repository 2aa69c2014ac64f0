package dev.berth.proxy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import tools.jackson.core.JacksonException;
import tools.jackson.core.StreamReadFeature;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * Loads the operator config (JSON). Strict on purpose: unknown keys, duplicate keys, wrong types
 * and out-of-range values are errors, because a typo in a security config must not silently
 * turn into "allow" or "no limit".
 *
 * <pre>{@code
 * {
 *   "presets": ["npm", "github"],
 *   "allow": [ {"host": "example.com", "ports": [443, 80]}, {"host": "*.corp.example"} ],
 *   "limits": {"maxHeaderBytes": 32768, "headerTimeoutMs": 10000, ...},
 *   "unsafe": {"unsafeAllowLoopbackUpstreams": true}      // tests only; loudly audited
 * }
 * }</pre>
 *
 * Unsafe settings are accepted only inside an explicit {@code "unsafe"} block, so they cannot be
 * switched on by copy-pasting one key into {@code limits}.
 */
public final class ConfigLoader {
    private static final Set<String> TOP = Set.of("presets", "allow", "limits", "unsafe");
    private static final Set<String> ENTRY = Set.of("host", "ports");
    private static final Set<String> LIMITS = Set.of("maxHeaderBytes", "maxHeaderCount", "headerTimeoutMs", "idleTimeoutMs",
            "maxTunnelsPerWorkspace", "maxBytesPerWorkspace", "dnsTimeoutMs", "connectTimeoutMs");
    private static final Set<String> UNSAFE = Set.of("unsafeAllowLoopbackUpstreams");

    private ConfigLoader() {}

    public static ProxyConfig load(Path file) throws ConfigException {
        String text;
        try {
            text = Files.readString(file);
        } catch (IOException e) {
            throw new ConfigException("cannot read config " + file + ": " + e.getMessage(), e);
        }
        return parse(text);
    }

    public static ProxyConfig parse(String json) throws ConfigException {
        JsonNode root;
        try {
            JsonMapper mapper = JsonMapper.builder().enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION).build();
            root = mapper.readTree(json);
        } catch (JacksonException e) {
            throw new ConfigException("config is not valid JSON: " + e.getOriginalMessage(), e);
        }
        if (root == null || !root.isObject()) throw new ConfigException("config must be a JSON object");
        checkKeys(root, TOP, "config");
        List<Policy.Entry> entries = new ArrayList<>();
        ProxyConfig.Builder b = ProxyConfig.builder();
        JsonNode presets = root.get("presets");
        if (presets != null) {
            if (!presets.isArray()) throw new ConfigException("\"presets\" must be an array of preset names");
            for (JsonNode p : presets.values()) {
                if (!p.isString()) throw new ConfigException("\"presets\" entries must be strings, got " + p);
                List<Policy.Entry> preset = Presets.get(p.stringValue());
                if (preset == null) throw new ConfigException("unknown preset '" + HostNames.printable(p.stringValue()) + "' (known: " + Presets.names() + ")");
                entries.addAll(preset);
            }
        }
        JsonNode allow = root.get("allow");
        if (allow != null) {
            if (!allow.isArray()) throw new ConfigException("\"allow\" must be an array of {\"host\", \"ports\"} objects");
            int i = 0;
            for (JsonNode e : allow.values()) {
                entries.add(entry(e, "allow[" + i++ + "]"));
            }
        }
        b.ceiling(new Policy(entries));
        JsonNode limits = root.get("limits");
        if (limits != null) limits(limits, b);
        JsonNode unsafe = root.get("unsafe");
        if (unsafe != null) {
            if (!unsafe.isObject()) throw new ConfigException("\"unsafe\" must be an object");
            checkKeys(unsafe, UNSAFE, "unsafe");
            JsonNode v = unsafe.get("unsafeAllowLoopbackUpstreams");
            if (v != null) {
                if (!v.isBoolean()) throw new ConfigException("unsafe.unsafeAllowLoopbackUpstreams must be a boolean, got " + v);
                b.unsafeAllowLoopbackUpstreams(v.booleanValue());
            }
        }
        return b.build();
    }

    private static Policy.Entry entry(JsonNode e, String where) throws ConfigException {
        if (!e.isObject()) throw new ConfigException(where + " must be an object with \"host\" and optional \"ports\"");
        checkKeys(e, ENTRY, where);
        JsonNode host = e.get("host");
        if (host == null || !host.isString()) throw new ConfigException(where + ".host must be a string");
        HostPattern pattern;
        try {
            pattern = HostPattern.parse(host.stringValue());
        } catch (HostNames.InvalidHostException ex) {
            throw new ConfigException(where + ".host: " + ex.getMessage());
        }
        Set<Integer> ports = new TreeSet<>();
        JsonNode pn = e.get("ports");
        if (pn == null) {
            ports.add(443);
        } else {
            if (!pn.isArray() || pn.size() == 0) throw new ConfigException(where + ".ports must be a non-empty array of port numbers");
            for (JsonNode p : pn.values()) {
                if (!p.isInt() || p.intValue() < 1 || p.intValue() > 65535) {
                    throw new ConfigException(where + ".ports: invalid port " + p + " (must be an integer 1-65535)");
                }
                ports.add(p.intValue());
            }
        }
        return new Policy.Entry(pattern, ports);
    }

    private static void limits(JsonNode limits, ProxyConfig.Builder b) throws ConfigException {
        if (!limits.isObject()) throw new ConfigException("\"limits\" must be an object");
        for (Map.Entry<String, JsonNode> e : limits.properties()) {
            if (UNSAFE.contains(e.getKey())) {
                throw new ConfigException("setting '" + e.getKey() + "' is only accepted inside an explicit \"unsafe\" block");
            }
        }
        checkKeys(limits, LIMITS, "limits");
        for (Map.Entry<String, JsonNode> e : limits.properties()) {
            JsonNode v = e.getValue();
            if (!v.isIntegralNumber() || v.longValue() <= 0) {
                throw new ConfigException("limits." + e.getKey() + " must be a positive integer, got " + v);
            }
            long n = v.longValue();
            switch (e.getKey()) {
                case "maxHeaderBytes" -> b.maxHeaderBytes(toInt(n, e.getKey()));
                case "maxHeaderCount" -> b.maxHeaderCount(toInt(n, e.getKey()));
                case "headerTimeoutMs" -> b.headerTimeout(Duration.ofMillis(n));
                case "idleTimeoutMs" -> b.idleTimeout(Duration.ofMillis(n));
                case "maxTunnelsPerWorkspace" -> b.maxTunnelsPerWorkspace(toInt(n, e.getKey()));
                case "maxBytesPerWorkspace" -> b.maxBytesPerWorkspace(n);
                case "dnsTimeoutMs" -> b.dnsTimeout(Duration.ofMillis(n));
                case "connectTimeoutMs" -> b.connectTimeout(Duration.ofMillis(n));
                default -> throw new AssertionError(e.getKey());
            }
        }
    }

    private static int toInt(long n, String key) throws ConfigException {
        if (n > Integer.MAX_VALUE) throw new ConfigException("limits." + key + " too large: " + n);
        return (int) n;
    }

    private static void checkKeys(JsonNode obj, Set<String> allowed, String where) throws ConfigException {
        for (Map.Entry<String, JsonNode> e : obj.properties()) {
            if (UNSAFE.contains(e.getKey()) && !"unsafe".equals(where)) {
                throw new ConfigException("setting '" + e.getKey() + "' is only accepted inside an explicit \"unsafe\" block");
            }
            if (!allowed.contains(e.getKey())) {
                throw new ConfigException("unknown key '" + HostNames.printable(e.getKey()) + "' in " + where + " (allowed: " + new TreeSet<>(allowed) + ")");
            }
        }
    }
}
