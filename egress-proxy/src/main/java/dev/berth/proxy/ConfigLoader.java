package dev.berth.proxy;

import dev.berth.proxy.net.AddressClassifier;
import dev.berth.proxy.net.HostNames;
import dev.berth.proxy.policy.Advisories;
import dev.berth.proxy.policy.ApprovalSettings;
import dev.berth.proxy.policy.HostPattern;
import dev.berth.proxy.policy.Policy;
import dev.berth.proxy.policy.Presets;
import dev.berth.proxy.policy.RegistryRule;
import dev.berth.proxy.policy.SecretBinding;
import dev.berth.proxy.tls.Pem;
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
 *   "presetMirrors": {"debian": [{"host": "apt.corp.example", "ports": [80]}]},  // preset:debian means the mirror
 *   "allow": [ {"host": "example.com", "ports": [443, 80]}, {"host": "*.corp.example"} ],
 *   "limits": {"maxHeaderBytes": 32768, "headerTimeoutMs": 10000, ...},
 *   "unsafe": {"unsafeAllowLoopbackUpstreams": true},     // tests only; loudly audited
 *   "secrets": {
 *     "github": {"env": "GITHUB_TOKEN", "hosts": ["api.github.com", "github.com"],
 *                "fromEnv": "BERTH_SECRET_GITHUB",            // or "fromFile": "/run/secrets/gh" (exactly one)
 *                "headers": ["Authorization"],                 // where the placeholder is swapped (default)
 *                "unsafeAllowPlainHttp": false}                // default false
 *   },
 *   "tls": {"upstreamTrust": ["/etc/berth/corp-ca.pem"],      // extra CAs for intercepted upstreams
 *           "ports": [443, 8443]}                             // CONNECT ports spoken as TLS (SNI check, interception)
 * }
 * }</pre>
 *
 * Secret values are read here (environment variable or file, trailing newlines trimmed) and
 * never appear in an error message: errors name the secret and the source only. Every host a
 * secret is bound to must be allowed by the ceiling on port 443.
 *
 * Unsafe settings are accepted only inside an explicit {@code "unsafe"} block, so they cannot be
 * switched on by copy-pasting one key into {@code limits}.
 */
public final class ConfigLoader {
    private static final Set<String> TOP = Set.of("presets", "presetMirrors", "allow", "limits", "unsafe", "secrets", "tls", "registryRules", "advisories", "approval");
    private static final Set<String> APPROVAL = Set.of("hosts", "durationsS", "timeoutS");
    private static final Set<String> RULE = Set.of("hosts", "pushRepos", "minReleaseAgeDays", "exempt");
    private static final Set<String> SECRET = Set.of("env", "hosts", "headers", "fromEnv", "fromFile", "unsafeAllowPlainHttp");
    private static final Set<String> TLS = Set.of("upstreamTrust", "ports");
    private static final Set<String> ENTRY = Set.of("host", "ports");
    private static final Set<String> LIMITS = Set.of("quotaWindowMs", "maxConnectsPerSecond", "placeholderTtlMs", "maxHeaderBytes", "maxHeaderCount", "maxMetadataBytes", "headerTimeoutMs", "idleTimeoutMs",
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
        return parse(json, System::getenv);
    }

    /** As {@link #parse(String)} with an explicit environment (tests). */
    static ProxyConfig parse(String json, java.util.function.Function<String, String> env) throws ConfigException {
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
        // the operator's mirrors first: a preset in "presets" (and preset:NAME in any narrowing) then stands for them
        java.util.Map<String, List<Policy.Entry>> mirrors = new java.util.LinkedHashMap<>();
        JsonNode mirrorNode = root.get("presetMirrors");
        if (mirrorNode != null) {
            if (!mirrorNode.isObject()) throw new ConfigException("\"presetMirrors\" must be an object of preset name -> [{\"host\", \"ports\"}]");
            for (var m : mirrorNode.properties()) {
                String where = "presetMirrors." + HostNames.printable(m.getKey());
                if (Presets.get(m.getKey()) == null) throw new ConfigException(where + ": unknown preset (known: " + Presets.names() + ")");
                if (!m.getValue().isArray() || m.getValue().isEmpty()) throw new ConfigException(where + " must be a non-empty array of {\"host\", \"ports\"} objects");
                List<Policy.Entry> hosts = new ArrayList<>();
                int i = 0;
                for (JsonNode e : m.getValue().values()) hosts.add(entry(e, where + "[" + i++ + "]"));
                mirrors.put(m.getKey(), hosts);
                b.presetMirror(m.getKey(), hosts);
            }
        }
        JsonNode presets = root.get("presets");
        if (presets != null) {
            if (!presets.isArray()) throw new ConfigException("\"presets\" must be an array of preset names");
            for (JsonNode p : presets.values()) {
                if (!p.isString()) throw new ConfigException("\"presets\" entries must be strings, got " + p);
                List<Policy.Entry> preset = mirrors.containsKey(p.stringValue()) ? mirrors.get(p.stringValue()) : Presets.get(p.stringValue());
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
        JsonNode tls = root.get("tls");
        if (tls != null) tls(tls, b);
        JsonNode secrets = root.get("secrets");
        if (secrets != null) secrets(secrets, b, env);
        JsonNode rules = root.get("registryRules");
        if (rules != null) registryRules(rules, b);
        JsonNode approval = root.get("approval");
        if (approval != null) approval(approval, b);
        JsonNode advisories = root.get("advisories");
        if (advisories != null) {
            if (!advisories.isString()) throw new ConfigException("\"advisories\" must be the path of an OSV JSON file or of a directory of them");
            try {
                b.advisories(Advisories.load(Path.of(advisories.stringValue())));
            } catch (IllegalArgumentException ex) {
                throw new ConfigException(ex.getMessage());
            }
        }
        try {
            return b.build();
        } catch (IllegalArgumentException e) {
            throw new ConfigException(e.getMessage());
        }
    }

    private static void tls(JsonNode tls, ProxyConfig.Builder b) throws ConfigException {
        if (!tls.isObject()) throw new ConfigException("\"tls\" must be an object");
        checkKeys(tls, TLS, "tls");
        JsonNode ports = tls.get("ports");
        if (ports != null) {
            if (!ports.isArray() || ports.isEmpty()) throw new ConfigException("tls.ports must be a non-empty array of port numbers");
            Set<Integer> set = new TreeSet<>();
            for (JsonNode p : ports.values()) {
                if (!p.isInt() || p.intValue() < 1 || p.intValue() > 65535) {
                    throw new ConfigException("tls.ports entries must be integers 1-65535, got " + p);
                }
                set.add(p.intValue());
            }
            // 443 keeps its SNI check whatever else is listed: dropping it would weaken every HTTPS tunnel
            if (!set.contains(443)) throw new ConfigException("tls.ports must include 443, got " + set);
            b.tlsPorts(set);
        }
        JsonNode trust = tls.get("upstreamTrust");
        if (trust == null) return;
        if (!trust.isArray()) throw new ConfigException("tls.upstreamTrust must be an array of PEM file paths");
        List<Path> files = new ArrayList<>();
        int i = 0;
        for (JsonNode t : trust.values()) {
            String where = "tls.upstreamTrust[" + i++ + "]";
            if (!t.isString() || t.stringValue().isEmpty()) throw new ConfigException(where + " must be a non-empty string path");
            Path p = Path.of(t.stringValue());
            try {
                Pem.readCertificates(p);
            } catch (IOException e) {
                throw new ConfigException(where + ": cannot use " + p + " as a CA file: " + e.getMessage(), e);
            }
            files.add(p);
        }
        b.upstreamTrustFiles(files);
    }

    private static void secrets(JsonNode secrets, ProxyConfig.Builder b, java.util.function.Function<String, String> env)
            throws ConfigException {
        if (!secrets.isObject()) throw new ConfigException("\"secrets\" must be an object of name -> {\"env\", \"hosts\", \"fromEnv\"|\"fromFile\"}");
        for (Map.Entry<String, JsonNode> e : secrets.properties()) {
            String name = e.getKey();
            if (!SecretBinding.NAME.matcher(name).matches()) {
                throw new ConfigException("secret name '" + HostNames.printable(name) + "' is invalid: must match [a-z0-9_]{1,32}");
            }
            String where = "secret '" + name + "'";
            JsonNode s = e.getValue();
            if (!s.isObject()) throw new ConfigException(where + " must be an object");
            checkKeys(s, SECRET, "secrets." + name);
            JsonNode envName = s.get("env");
            if (envName == null || !envName.isString()) throw new ConfigException(where + ": \"env\" must be a string");
            if (!SecretBinding.ENV.matcher(envName.stringValue()).matches()) {
                throw new ConfigException(where + ": env '" + HostNames.printable(envName.stringValue()) + "' is invalid: must match [A-Z_][A-Z0-9_]{0,63}");
            }
            JsonNode hosts = s.get("hosts");
            if (hosts == null || !hosts.isArray() || hosts.isEmpty()) {
                throw new ConfigException(where + ": \"hosts\" must be a non-empty array of host names");
            }
            List<String> hostList = new ArrayList<>();
            for (JsonNode h : hosts.values()) {
                if (!h.isString()) throw new ConfigException(where + ": \"hosts\" entries must be strings, got " + h);
                hostList.add(h.stringValue());
            }
            List<String> headerList = null;
            JsonNode headers = s.get("headers");
            if (headers != null) {
                if (!headers.isArray() || headers.isEmpty()) throw new ConfigException(where + ": \"headers\" must be a non-empty array of header names");
                headerList = new ArrayList<>();
                for (JsonNode h : headers.values()) {
                    if (!h.isString()) throw new ConfigException(where + ": \"headers\" entries must be strings, got " + h);
                    headerList.add(h.stringValue());
                }
            }
            JsonNode plain = s.get("unsafeAllowPlainHttp");
            if (plain != null && !plain.isBoolean()) throw new ConfigException(where + ": \"unsafeAllowPlainHttp\" must be a boolean");
            JsonNode fromEnv = s.get("fromEnv");
            JsonNode fromFile = s.get("fromFile");
            if ((fromEnv == null) == (fromFile == null)) {
                throw new ConfigException(where + " needs exactly one of \"fromEnv\" or \"fromFile\"");
            }
            String value;
            if (fromEnv != null) {
                if (!fromEnv.isString()) throw new ConfigException(where + ": \"fromEnv\" must be a string");
                value = env.apply(fromEnv.stringValue());
                if (value == null || value.isEmpty()) {
                    throw new ConfigException(where + ": environment variable " + HostNames.printable(fromEnv.stringValue())
                            + " (fromEnv) is not set or empty");
                }
            } else {
                if (!fromFile.isString()) throw new ConfigException(where + ": \"fromFile\" must be a string");
                Path p = Path.of(fromFile.stringValue());
                try {
                    value = Files.readString(p);
                } catch (IOException | RuntimeException ex) {
                    // The exception message is not quoted: for a malformed file it could carry content.
                    throw new ConfigException(where + ": cannot read fromFile " + p + " (" + ex.getClass().getSimpleName() + ")");
                }
                value = value.replaceAll("[\r\n]+$", "");
                if (value.isEmpty()) throw new ConfigException(where + ": fromFile " + p + " is empty");
            }
            try {
                SecretBinding binding = SecretBinding.of(name, envName.stringValue(), hostList, value);
                if (headerList != null) binding = binding.withHeaders(headerList);
                b.secret(plain != null && plain.booleanValue() ? binding.withUnsafeAllowPlainHttp(true) : binding);
            } catch (IllegalArgumentException ex) {
                throw new ConfigException(ex.getMessage());
            }
        }
    }

    private static void registryRules(JsonNode rules, ProxyConfig.Builder b) throws ConfigException {
        if (!rules.isObject()) throw new ConfigException("\"registryRules\" must be an object of kind (npm, pypi, maven, git) -> {\"hosts\", \"pushRepos\"}");
        for (Map.Entry<String, JsonNode> e : rules.properties()) {
            RegistryRule.Kind kind;
            try {
                kind = RegistryRule.Kind.valueOf(e.getKey().toUpperCase(java.util.Locale.ROOT));
            } catch (IllegalArgumentException bad) {
                throw new ConfigException("registryRules: unknown kind '" + HostNames.printable(e.getKey()) + "' (npm, pypi, maven, git)");
            }
            JsonNode r = e.getValue();
            if (!r.isObject()) throw new ConfigException("registryRules." + e.getKey() + " must be an object");
            checkKeys(r, RULE, "registryRules." + e.getKey());
            JsonNode age = r.get("minReleaseAgeDays");
            if (age != null && (!age.isNumber() || age.doubleValue() < 0 || age.doubleValue() > 3650)) {
                throw new ConfigException("registryRules." + e.getKey() + ".minReleaseAgeDays must be a number of days from 0 to 3650, got " + age);
            }
            List<String> exempt = strings(r.get("exempt"), "registryRules." + e.getKey() + ".exempt");
            if (exempt != null && age == null) {
                throw new ConfigException("registryRules." + e.getKey() + ".exempt needs minReleaseAgeDays (it exempts packages from the release age)");
            }
            try {
                RegistryRule rule = RegistryRule.of(kind, strings(r.get("hosts"), "registryRules." + e.getKey() + ".hosts"),
                        strings(r.get("pushRepos"), "registryRules." + e.getKey() + ".pushRepos"));
                if (age != null) rule = rule.withMinReleaseAge(Duration.ofSeconds(Math.round(age.doubleValue() * 86400)), exempt);
                b.registryRule(rule);
            } catch (IllegalArgumentException ex) {
                throw new ConfigException(ex.getMessage());
            }
        }
    }

    private static void approval(JsonNode a, ProxyConfig.Builder b) throws ConfigException {
        if (!a.isObject()) throw new ConfigException("\"approval\" must be an object {\"hosts\": [{\"host\", \"ports\"}], \"durationsS\": [...], \"timeoutS\": n}");
        checkKeys(a, APPROVAL, "approval");
        JsonNode hosts = a.get("hosts");
        if (hosts == null || !hosts.isArray() || hosts.isEmpty()) {
            throw new ConfigException("approval.hosts must be a non-empty array of {\"host\", \"ports\"} objects");
        }
        List<Policy.Entry> entries = new ArrayList<>();
        int i = 0;
        for (JsonNode e : hosts.values()) {
            String where = "approval.hosts[" + i++ + "]";
            Policy.Entry entry = entry(e, where);
            HostPattern p = entry.host();
            if (p.ip() != null && !AddressClassifier.classify(p.ip()).isPublic()) {
                throw new ConfigException(where + ": IP literal " + p + " can never be approved: "
                        + AddressClassifier.classify(p.ip()).description() + " (a hard rule)");
            }
            entries.add(entry);
        }
        List<java.time.Duration> durations = new ArrayList<>(ApprovalSettings.NONE.durations());
        JsonNode ds = a.get("durationsS");
        if (ds != null) {
            if (!ds.isArray() || ds.isEmpty()) throw new ConfigException("approval.durationsS must be a non-empty array of seconds");
            durations.clear();
            for (JsonNode d : ds.values()) {
                if (!d.isIntegralNumber() || d.longValue() < 1) throw new ConfigException("approval.durationsS entries must be positive integers (seconds), got " + d);
                durations.add(java.time.Duration.ofSeconds(d.longValue()));
            }
        }
        java.time.Duration timeout = ApprovalSettings.NONE.askTimeout();
        JsonNode t = a.get("timeoutS");
        if (t != null) {
            if (!t.isIntegralNumber() || t.longValue() < 1 || t.longValue() > 3600) throw new ConfigException("approval.timeoutS must be an integer 1-3600, got " + t);
            timeout = java.time.Duration.ofSeconds(t.longValue());
        }
        try {
            b.approval(new ApprovalSettings(new Policy(entries), durations, timeout));
        } catch (IllegalArgumentException ex) {
            throw new ConfigException(ex.getMessage());
        }
    }

    private static List<String> strings(JsonNode n, String where) throws ConfigException {
        if (n == null) return null;
        if (!n.isArray()) throw new ConfigException(where + " must be an array of strings");
        List<String> out = new ArrayList<>();
        for (JsonNode x : n.values()) {
            if (!x.isString()) throw new ConfigException(where + " entries must be strings, got " + x);
            out.add(x.stringValue());
        }
        return out;
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
                case "maxMetadataBytes" -> b.maxMetadataBytes(toInt(n, e.getKey()));
                case "headerTimeoutMs" -> b.headerTimeout(Duration.ofMillis(n));
                case "idleTimeoutMs" -> b.idleTimeout(Duration.ofMillis(n));
                case "maxTunnelsPerWorkspace" -> b.maxTunnelsPerWorkspace(toInt(n, e.getKey()));
                case "maxBytesPerWorkspace" -> b.maxBytesPerWorkspace(n);
                case "dnsTimeoutMs" -> b.dnsTimeout(Duration.ofMillis(n));
                case "connectTimeoutMs" -> b.connectTimeout(Duration.ofMillis(n));
                case "quotaWindowMs" -> b.quotaWindow(Duration.ofMillis(n));
                case "maxConnectsPerSecond" -> b.maxConnectsPerSecond(toInt(n, e.getKey()));
                case "placeholderTtlMs" -> b.placeholderTtl(Duration.ofMillis(n));
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
