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
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

/**
 * Loads the egress config (JSON): a file of its own ({@code --egress}) or the operator file's {@code egress} section.
 * Strict on purpose: unknown keys (with the closest valid key suggested), duplicate keys, wrong types and
 * out-of-range values are errors, because a typo in a security config must not silently turn into "allow" or "no
 * limit". Keys are snake_case like the rest of the operator file; the old camelCase spelling of each key is still
 * accepted with one deprecation warning per key per load ({@link ConfigKeys}). Errors name a key as the file wrote it.
 *
 * <pre>{@code
 * {
 *   "presets": ["npm", "github"],
 *   "preset_mirrors": {"debian": [{"host": "apt.corp.example", "ports": [80]}]},  // preset:debian means the mirror
 *   "allow": [ {"host": "example.com", "ports": [443, 80]}, {"host": "*.corp.example"} ],
 *   "internal_hosts": [{"host": "mirror.corp.example", "ranges": ["10.1.0.0/16"]}],  // named hosts into stated private ranges
 *   "limits": {"max_header_bytes": 32768, "header_timeout_ms": 10000, ...},
 *   "unsafe": {"unsafe_allow_loopback_upstreams": true},     // tests only; loudly audited
 *   "secrets": {
 *     "github": {"env": "GITHUB_TOKEN", "hosts": ["api.github.com", "github.com"],
 *                "from_env": "BERTH_SECRET_GITHUB",            // or "from_file": "/run/secrets/gh" (exactly one)
 *                "headers": ["Authorization"],                  // where the placeholder is swapped (default)
 *                "unsafe_allow_plain_http": false}              // default false
 *   },
 *   "tls": {"upstream_trust": ["/etc/berth/corp-ca.pem"],       // extra CAs for intercepted upstreams
 *           "ports": [443, 8443]}                              // CONNECT ports spoken as TLS (SNI check, interception)
 * }
 * }</pre>
 *
 * Every key, its type, default and range: {@code docs/operator-config.md}.
 *
 * Secret values are read here (environment variable or file, trailing newlines trimmed) and
 * never appear in an error message: errors name the secret and the source only. Every host a
 * secret is bound to must be allowed by the ceiling on port 443.
 *
 * Unsafe settings are accepted only inside an explicit {@code "unsafe"} block, so they cannot be
 * switched on by copy-pasting one key into {@code limits}.
 */
public final class ConfigLoader {
    private static final System.Logger LOG = System.getLogger("berth.config");
    private static final Set<String> TOP = Set.of("presets", "preset_mirrors", "allow", "limits", "unsafe", "secrets", "tls", "registry_rules", "advisories", "approval",
            "internal_hosts");
    private static final Set<String> APPROVAL = Set.of("hosts", "durations_s", "timeout_s");
    private static final Set<String> RULE = Set.of("hosts", "push_repos", "min_release_age_days", "exempt", "api_hosts");
    private static final Set<String> SECRET = Set.of("env", "hosts", "headers", "from_env", "from_file", "unsafe_allow_plain_http");
    private static final Set<String> TLS = Set.of("upstream_trust", "ports");
    private static final Set<String> ENTRY = Set.of("host", "ports");
    private static final String UNSAFE_LOOPBACK = "unsafe_allow_loopback_upstreams";
    private static final Set<String> UNSAFE = Set.of(UNSAFE_LOOPBACK);

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

    /** Parses a config; deprecated key spellings are logged (one warning per key). */
    public static ProxyConfig parse(String json) throws ConfigException {
        return parse(json, System::getenv, ConfigLoader::logWarning, "config");
    }

    /**
     * Parses the operator file's {@code egress} section; each deprecation warning goes to {@code warnings} (once per
     * key), and errors about the section's own keys say "in egress".
     */
    public static ProxyConfig parseSection(String json, java.util.function.Consumer<String> warnings) throws ConfigException {
        return parse(json, System::getenv, warnings, "egress");
    }

    /** As {@link #parse(String)} with an explicit environment (tests). */
    static ProxyConfig parse(String json, java.util.function.Function<String, String> env) throws ConfigException {
        return parse(json, env, ConfigLoader::logWarning, "config");
    }

    /**
     * The egress section (a JSON tree) with its file names (secret files, upstream CA files) resolved against
     * {@code dir}, in either key spelling: the operator file's names are relative to its own folder.
     */
    public static JsonNode resolveFiles(JsonNode egress, Path dir) {
        if (!(egress instanceof ObjectNode o)) return egress;
        ObjectNode copy = o.deepCopy();
        if (copy.get("secrets") instanceof ObjectNode secrets) {
            for (var e : secrets.properties()) {
                for (String key : List.of("from_file", "fromFile")) {
                    if (e.getValue() instanceof ObjectNode b && b.get(key) != null && b.get(key).isString()) {
                        b.put(key, dir.resolve(b.get(key).asString()).normalize().toString());
                    }
                }
            }
        }
        for (String key : List.of("upstream_trust", "upstreamTrust")) {
            if (copy.get("tls") instanceof ObjectNode tls && tls.get(key) instanceof ArrayNode trust) {
                for (int i = 0; i < trust.size(); i++) {
                    if (trust.get(i).isString()) trust.set(i, dir.resolve(trust.get(i).asString()).normalize().toString());
                }
            }
        }
        return copy;
    }

    private static void logWarning(String w) { LOG.log(System.Logger.Level.WARNING, w); }

    static ProxyConfig parse(String json, java.util.function.Function<String, String> env, java.util.function.Consumer<String> warnings,
                             String rootName) throws ConfigException {
        JsonNode root;
        try {
            JsonMapper mapper = JsonMapper.builder().enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION).build();
            root = mapper.readTree(json);
        } catch (JacksonException e) {
            throw new ConfigException("config is not valid JSON: " + e.getOriginalMessage(), e);
        }
        if (root == null || !root.isObject()) throw new ConfigException("config must be a JSON object");
        return new ConfigLoader.Reader(env, new ConfigKeys.Deprecations(warnings)).read(root, rootName);
    }

    /** One load: the environment secrets are read from and the deprecation warnings already given. */
    private record Reader(java.util.function.Function<String, String> env, ConfigKeys.Deprecations deprecations) {
        ConfigKeys.Section section(JsonNode obj, String where, Set<String> allowed) throws ConfigException {
            for (Map.Entry<String, JsonNode> e : obj.properties()) {
                if (UNSAFE.contains(ConfigKeys.snakeCase(e.getKey())) && !"unsafe".equals(where)) {
                    throw new ConfigException("setting '" + HostNames.printable(e.getKey()) + "' is only accepted inside an explicit \"unsafe\" block");
                }
            }
            return ConfigKeys.Section.of(obj, where, allowed, deprecations);
        }

        ProxyConfig read(JsonNode rootNode, String rootName) throws ConfigException {
            ConfigKeys.Section root = section(rootNode, rootName, TOP);
            List<Policy.Entry> entries = new ArrayList<>();
            ProxyConfig.Builder b = ProxyConfig.builder();
            // the operator's mirrors first: a preset in "presets" (and preset:NAME in any narrowing) then stands for them
            java.util.Map<String, List<Policy.Entry>> mirrors = new java.util.LinkedHashMap<>();
            JsonNode mirrorNode = root.get("preset_mirrors");
            String mirrorKey = root.name("preset_mirrors");
            if (mirrorNode != null) {
                if (!mirrorNode.isObject()) throw new ConfigException("\"" + mirrorKey + "\" must be an object of preset name -> [{\"host\", \"ports\"}]");
                for (var m : mirrorNode.properties()) {
                    String where = mirrorKey + "." + HostNames.printable(m.getKey());
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
            if (limits != null) {
                if (!limits.isObject()) throw new ConfigException("\"limits\" must be an object");
                ConfigSections.limits(section(limits, "limits", ConfigSections.LIMITS), b);
            }
            JsonNode internal = root.get("internal_hosts");
            if (internal != null) {
                java.util.Map<String, ConfigKeys.Section> internalEntries = new java.util.LinkedHashMap<>();
                if (internal.isArray()) {
                    int i = 0;
                    for (JsonNode e : internal.values()) {
                        String at = root.name("internal_hosts") + "[" + i++ + "]";
                        if (!e.isObject()) throw new ConfigException(at + " must be an object {\"host\" or \"preset\", \"ranges\"}");
                        internalEntries.put(at, section(e, at, ConfigSections.INTERNAL_HOST));
                    }
                }
                ConfigSections.internalHosts(internal, root.name("internal_hosts"), internalEntries, mirrors, b);
            }
            JsonNode unsafeNode = root.get("unsafe");
            if (unsafeNode != null) {
                if (!unsafeNode.isObject()) throw new ConfigException("\"unsafe\" must be an object");
                ConfigKeys.Section unsafe = section(unsafeNode, "unsafe", UNSAFE);
                JsonNode v = unsafe.get(UNSAFE_LOOPBACK);
                if (v != null) {
                    if (!v.isBoolean()) throw new ConfigException(unsafe.path(UNSAFE_LOOPBACK) + " must be a boolean, got " + v);
                    b.unsafeAllowLoopbackUpstreams(v.booleanValue());
                }
            }
            JsonNode tls = root.get("tls");
            if (tls != null) tls(tls, b);
            JsonNode secrets = root.get("secrets");
            if (secrets != null) secrets(secrets, b);
            JsonNode rules = root.get("registry_rules");
            if (rules != null) registryRules(rules, root.name("registry_rules"), b);
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

        private void tls(JsonNode tlsNode, ProxyConfig.Builder b) throws ConfigException {
            if (!tlsNode.isObject()) throw new ConfigException("\"tls\" must be an object");
            ConfigKeys.Section tls = section(tlsNode, "tls", TLS);
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
            JsonNode trust = tls.get("upstream_trust");
            if (trust == null) return;
            String key = tls.path("upstream_trust");
            if (!trust.isArray()) throw new ConfigException(key + " must be an array of PEM file paths");
            List<Path> files = new ArrayList<>();
            int i = 0;
            for (JsonNode t : trust.values()) {
                String where = key + "[" + i++ + "]";
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

        private void secrets(JsonNode secrets, ProxyConfig.Builder b) throws ConfigException {
            if (!secrets.isObject()) throw new ConfigException("\"secrets\" must be an object of name -> {\"env\", \"hosts\", \"from_env\"|\"from_file\"}");
            for (Map.Entry<String, JsonNode> e : secrets.properties()) {
                String name = e.getKey();
                if (!SecretBinding.NAME.matcher(name).matches()) {
                    throw new ConfigException("secret name '" + HostNames.printable(name) + "' is invalid: must match [a-z0-9_]{1,32}");
                }
                String where = "secret '" + name + "'";
                if (!e.getValue().isObject()) throw new ConfigException(where + " must be an object");
                ConfigKeys.Section s = section(e.getValue(), "secrets." + name, SECRET);
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
                JsonNode plain = s.get("unsafe_allow_plain_http");
                if (plain != null && !plain.isBoolean()) {
                    throw new ConfigException(where + ": \"" + s.name("unsafe_allow_plain_http") + "\" must be a boolean");
                }
                JsonNode fromEnv = s.get("from_env");
                JsonNode fromFile = s.get("from_file");
                String envKey = s.name("from_env");
                String fileKey = s.name("from_file");
                if ((fromEnv == null) == (fromFile == null)) {
                    throw new ConfigException(where + " needs exactly one of \"" + envKey + "\" or \"" + fileKey + "\"");
                }
                String value;
                if (fromEnv != null) {
                    if (!fromEnv.isString()) throw new ConfigException(where + ": \"" + envKey + "\" must be a string");
                    value = env.apply(fromEnv.stringValue());
                    if (value == null || value.isEmpty()) {
                        throw new ConfigException(where + ": environment variable " + HostNames.printable(fromEnv.stringValue())
                                + " (" + envKey + ") is not set or empty");
                    }
                } else {
                    if (!fromFile.isString()) throw new ConfigException(where + ": \"" + fileKey + "\" must be a string");
                    Path p = Path.of(fromFile.stringValue());
                    try {
                        value = Files.readString(p);
                    } catch (IOException | RuntimeException ex) {
                        // The exception message is not quoted: for a malformed file it could carry content.
                        throw new ConfigException(where + ": cannot read " + fileKey + " " + p + " (" + ex.getClass().getSimpleName() + ")");
                    }
                    value = value.replaceAll("[\r\n]+$", "");
                    if (value.isEmpty()) throw new ConfigException(where + ": " + fileKey + " " + p + " is empty");
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

        private void registryRules(JsonNode rules, String key, ProxyConfig.Builder b) throws ConfigException {
            if (!rules.isObject()) throw new ConfigException("\"" + key + "\" must be an object of kind (npm, pypi, maven, git) -> {\"hosts\", \"push_repos\"}");
            for (Map.Entry<String, JsonNode> e : rules.properties()) {
                RegistryRule.Kind kind;
                try {
                    kind = RegistryRule.Kind.valueOf(e.getKey().toUpperCase(java.util.Locale.ROOT));
                } catch (IllegalArgumentException bad) {
                    throw new ConfigException(key + ": unknown kind '" + HostNames.printable(e.getKey()) + "' (npm, pypi, maven, git)");
                }
                String at = key + "." + e.getKey();
                if (!e.getValue().isObject()) throw new ConfigException(at + " must be an object");
                ConfigKeys.Section r = section(e.getValue(), at, RULE);
                JsonNode age = r.get("min_release_age_days");
                if (age != null && (!age.isNumber() || age.doubleValue() < 0 || age.doubleValue() > 3650)) {
                    throw new ConfigException(r.path("min_release_age_days") + " must be a number of days from 0 to 3650, got " + age);
                }
                List<String> exempt = strings(r.get("exempt"), at + ".exempt");
                if (exempt != null && age == null) {
                    throw new ConfigException(at + ".exempt needs " + r.name("min_release_age_days") + " (it exempts packages from the release age)");
                }
                try {
                    RegistryRule rule = RegistryRule.of(kind, strings(r.get("hosts"), at + ".hosts"), strings(r.get("push_repos"), r.path("push_repos")));
                    if (age != null) rule = rule.withMinReleaseAge(Duration.ofSeconds(Math.round(age.doubleValue() * 86400)), exempt);
                    List<String> api = strings(r.get("api_hosts"), r.path("api_hosts"));
                    if (api != null) rule = rule.withApiHosts(api);
                    b.registryRule(rule);
                } catch (IllegalArgumentException ex) {
                    throw new ConfigException(ex.getMessage());
                }
            }
        }

        private void approval(JsonNode node, ProxyConfig.Builder b) throws ConfigException {
            if (!node.isObject()) throw new ConfigException("\"approval\" must be an object {\"hosts\": [{\"host\", \"ports\"}], \"durations_s\": [...], \"timeout_s\": n}");
            ConfigKeys.Section a = section(node, "approval", APPROVAL);
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
            JsonNode ds = a.get("durations_s");
            if (ds != null) {
                String key = a.path("durations_s");
                if (!ds.isArray() || ds.isEmpty()) throw new ConfigException(key + " must be a non-empty array of seconds");
                durations.clear();
                for (JsonNode d : ds.values()) {
                    if (!d.isIntegralNumber() || d.longValue() < 1) throw new ConfigException(key + " entries must be positive integers (seconds), got " + d);
                    durations.add(java.time.Duration.ofSeconds(d.longValue()));
                }
            }
            java.time.Duration timeout = ApprovalSettings.NONE.askTimeout();
            JsonNode t = a.get("timeout_s");
            if (t != null) {
                if (!t.isIntegralNumber() || t.longValue() < 1 || t.longValue() > 3600) {
                    throw new ConfigException(a.path("timeout_s") + " must be an integer 1-3600, got " + t);
                }
                timeout = java.time.Duration.ofSeconds(t.longValue());
            }
            try {
                b.approval(new ApprovalSettings(new Policy(entries), durations, timeout));
            } catch (IllegalArgumentException ex) {
                // the settings name the old key; say the one the file used
                throw new ConfigException(ex.getMessage().replace("approval.durationsS", a.path("durations_s")));
            }
        }

        private Policy.Entry entry(JsonNode e, String where) throws ConfigException {
            if (!e.isObject()) throw new ConfigException(where + " must be an object with \"host\" and optional \"ports\"");
            ConfigKeys.Section s = section(e, where, ENTRY);
            JsonNode host = s.get("host");
            if (host == null || !host.isString()) throw new ConfigException(where + ".host must be a string");
            HostPattern pattern;
            try {
                pattern = HostPattern.parse(host.stringValue());
            } catch (HostNames.InvalidHostException ex) {
                throw new ConfigException(where + ".host: " + ex.getMessage());
            }
            Set<Integer> ports = new TreeSet<>();
            JsonNode pn = s.get("ports");
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
    }

    static List<String> strings(JsonNode n, String where) throws ConfigException {
        if (n == null) return null;
        if (!n.isArray()) throw new ConfigException(where + " must be an array of strings");
        List<String> out = new ArrayList<>();
        for (JsonNode x : n.values()) {
            if (!x.isString()) throw new ConfigException(where + " entries must be strings, got " + x);
            out.add(x.stringValue());
        }
        return out;
    }

    static int toInt(long n, String key) throws ConfigException {
        if (n > Integer.MAX_VALUE) throw new ConfigException(key + " must be a positive integer up to " + Integer.MAX_VALUE + ", got " + n);
        return (int) n;
    }
}
