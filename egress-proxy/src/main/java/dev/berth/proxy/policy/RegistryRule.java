package dev.berth.proxy.policy;

import dev.berth.proxy.net.HostNames;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;

/**
 * A package-aware rule for a registry or git host: what a workspace may do there beyond "the host is allowed".
 * Workspaces may read packages; they may not publish, unpublish, log in, mint tokens, change owners or dist-tags
 * (npm), upload (PyPI), deploy (Maven), or push (git, except to the repositories listed for the rule). Checked per
 * request, so the proxy terminates TLS for these hosts (and only these, plus secret-bound hosts).
 *
 * <p>Why: the registry is on every allowlist, so an install hook that steals a token can publish it as a package, and
 * a git host a workspace may fetch from is one it could push to. Immutable and thread-safe.
 */
public final class RegistryRule {
    /**
     * The protocol the rule understands. Its default hosts are every host of the matching preset (so the npm rule
     * covers yarn's default registry as well as npm's, and the PyPI rule the host that serves the files), plus the
     * hosts that take writes (PyPI's upload host); git also names the API host its push rules cover where a token is
     * bound to it.
     */
    public enum Kind {
        NPM("npm"), PYPI("pypi", "upload.pypi.org"), MAVEN("maven"), GIT(null, "github.com");

        final List<String> defaultHosts;

        Kind(String preset, String... more) {
            List<String> hs = new ArrayList<>();
            if (preset != null) for (Policy.Entry e : Presets.get(preset)) hs.add(e.host().toString());
            hs.addAll(List.of(more));
            this.defaultHosts = List.copyOf(hs);
        }

        /** Lowercase name as in the config ({@code npm}, {@code pypi}, ...). */
        public String label() {
            return name().toLowerCase(Locale.ROOT);
        }

        /** The hosts a rule of this kind covers when the operator names none. */
        public List<String> defaultHosts() {
            return defaultHosts;
        }
    }

    /** The git rule's default API host (of the default code host), whose REST writes its push rules cover. */
    static final List<String> DEFAULT_API_HOSTS = List.of("api.github.com");

    private final Kind kind;
    private final List<String> hosts;
    private final List<HostPattern> patterns;
    private final List<String> pushRepos;
    private final java.time.Duration minReleaseAge;
    private final List<String> exempt;
    /** git: API hosts of the code host whose REST writes the push rules cover (only those a token is bound to). */
    private final List<String> apiHosts;
    private final List<HostPattern> apiPatterns;

    private RegistryRule(Kind kind, List<String> hosts, List<HostPattern> patterns, List<String> pushRepos,
                         java.time.Duration minReleaseAge, List<String> exempt, List<String> apiHosts) {
        this.kind = kind;
        this.apiHosts = List.copyOf(apiHosts);
        List<HostPattern> aps = new ArrayList<>();
        for (String h : this.apiHosts) {
            try {
                aps.add(HostPattern.parse(h));
            } catch (HostNames.InvalidHostException e) {
                throw new IllegalArgumentException("registry rule git: API host: " + e.getMessage());
            }
        }
        this.apiPatterns = List.copyOf(aps);
        this.hosts = hosts;
        this.patterns = patterns;
        this.pushRepos = pushRepos;
        this.minReleaseAge = minReleaseAge;
        this.exempt = exempt;
    }

    /**
     * This rule with a minimum release age: versions published less than {@code age} ago are hidden from the
     * registry's metadata and their files refused, except for the {@code exempt} packages (exact names in the
     * ecosystem's spelling, npm {@code @scope/name}, PyPI any PEP 503 spelling, Maven {@code groupId:artifactId}; a
     * trailing {@code *} matches a prefix, e.g. {@code @myorg/*}).
     *
     * @throws IllegalArgumentException for a git rule, a negative age or a blank exemption
     */
    public RegistryRule withMinReleaseAge(java.time.Duration age, List<String> exempt) {
        if (kind == Kind.GIT) throw new IllegalArgumentException("registry rule git: minReleaseAgeDays applies to npm, pypi and maven rules only");
        if (age != null && age.isNegative()) throw new IllegalArgumentException("registry rule " + kind.label() + ": minReleaseAgeDays must not be negative");
        List<String> ex = exempt == null ? List.of() : List.copyOf(exempt);
        for (String e : ex) {
            if (e.isBlank()) throw new IllegalArgumentException("registry rule " + kind.label() + ": an exempt package name is blank");
        }
        return new RegistryRule(kind, hosts, patterns, pushRepos, age == null || age.isZero() ? null : age, ex, apiHosts);
    }

    /** The minimum release age, or null if fresh versions are not held back. */
    public java.time.Duration minReleaseAge() { return minReleaseAge; }

    public List<String> exempt() { return exempt; }

    /** Is this package exempt from the release age? */
    public boolean exempt(String pkg) {
        String n = RegistryPaths.normalizeName(kind, pkg);
        for (String e : exempt) {
            String x = RegistryPaths.normalizeName(kind, e.endsWith("*") ? e.substring(0, e.length() - 1) : e);
            if (e.endsWith("*") ? n.startsWith(x) : n.equals(x)) return true;
        }
        return false;
    }

    /**
     * @param hosts exact hosts or {@code *.suffix} patterns; null or empty = the kind's public default hosts
     * @param pushRepos git only: {@code owner/repo} paths a workspace may push to (everything else is refused)
     * @throws IllegalArgumentException naming the bad host or repository
     */
    public static RegistryRule of(Kind kind, List<String> hosts, List<String> pushRepos) {
        Objects.requireNonNull(kind, "kind");
        List<String> hs = hosts == null || hosts.isEmpty() ? kind.defaultHosts : List.copyOf(hosts);
        List<HostPattern> ps = new ArrayList<>();
        for (String h : hs) {
            try {
                HostPattern p = HostPattern.parse(h);
                if (p.ip() != null) throw new IllegalArgumentException("registry rule " + kind.label() + ": host '" + h + "' is an IP literal");
                ps.add(p);
            } catch (HostNames.InvalidHostException e) {
                throw new IllegalArgumentException("registry rule " + kind.label() + ": host: " + e.getMessage());
            }
        }
        List<String> repos = pushRepos == null ? List.of() : List.copyOf(pushRepos);
        if (kind != Kind.GIT && !repos.isEmpty()) {
            throw new IllegalArgumentException("registry rule " + kind.label() + ": pushRepos applies to git rules only");
        }
        for (String r : repos) {
            if (!r.matches("[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)+")) {
                throw new IllegalArgumentException("registry rule git: push repository '" + HostNames.printable(r) + "' must look like owner/repo");
            }
        }
        return new RegistryRule(kind, hs, List.copyOf(ps), repos, null, List.of(),
                kind == Kind.GIT && (hosts == null || hosts.isEmpty()) ? DEFAULT_API_HOSTS : List.of());
    }

    /**
     * git only: the code host's API hosts whose REST writes (POST, PUT, PATCH, DELETE) the push rules cover: refused
     * unless under {@code /repos/OWNER/REPO} of a repository in {@code pushRepos}. Each must be an exact host name.
     */
    public RegistryRule withApiHosts(List<String> api) {
        if (kind != Kind.GIT && !api.isEmpty()) throw new IllegalArgumentException("registry rule " + kind.label() + ": api_hosts applies to git rules only");
        return new RegistryRule(kind, hosts, patterns, pushRepos, minReleaseAge, exempt, api);
    }

    /**
     * This rule covering only the API hosts a secret binding is bound to ({@code bound} says which): without a token
     * the API takes no writes from a workspace, and a rule host is intercepted for every workspace.
     */
    public RegistryRule apiHostsBound(java.util.function.Predicate<String> bound) {
        List<String> kept = apiHosts.stream().filter(bound).toList();
        return kept.equals(apiHosts) ? this : withApiHosts(kept);
    }

    /** Did the operator name no hosts, so the rule covers its kind's defaults? */
    public boolean defaultHosts() { return hosts == kind.defaultHosts; }

    /**
     * This rule restricted to {@code allowed} of its default hosts (those the ceiling allows: a default host the
     * operator does not allow cannot be reached anyway).
     */
    public RegistryRule defaultHostsWithin(java.util.function.Predicate<HostPattern> allowed) {
        if (!defaultHosts()) return this;
        List<String> hs = new ArrayList<>();
        List<HostPattern> ps = new ArrayList<>();
        for (int i = 0; i < hosts.size(); i++) {
            if (allowed.test(patterns.get(i))) {
                hs.add(hosts.get(i));
                ps.add(patterns.get(i));
            }
        }
        if (hs.size() == hosts.size()) return this;
        return new RegistryRule(kind, List.copyOf(hs), List.copyOf(ps), pushRepos, minReleaseAge, exempt, apiHosts);
    }

    /** git: the API hosts this rule covers. */
    public List<String> apiHosts() { return apiHosts; }

    /**
     * The host whose metadata the proxy reads for a package served by {@code host}: PyPI's file host has no JSON API,
     * so a PyPI rule reads it from its first host (list the index first); other kinds read the host itself.
     */
    public String metadataHost(String host) {
        return kind == Kind.PYPI && !hosts.isEmpty() && !hosts.get(0).startsWith("*.") ? hosts.get(0) : host;
    }

    public Kind kind() { return kind; }
    public List<String> hosts() { return hosts; }
    public List<String> pushRepos() { return pushRepos; }
    public List<HostPattern> patterns() { return patterns; }

    public boolean matchesHost(String canonicalHost) {
        try {
            HostNames.Host h = HostNames.normalize(canonicalHost);
            for (HostPattern p : patterns) if (p.matches(h)) return true;
            for (HostPattern p : apiPatterns) if (p.matches(h)) return true;
        } catch (HostNames.InvalidHostException e) {
            return false;
        }
        return false;
    }

    private boolean apiHost(String host) {
        try {
            HostNames.Host h = HostNames.normalize(host);
            for (HostPattern p : apiPatterns) if (p.matches(h)) return true;
        } catch (HostNames.InvalidHostException e) {
            return false;
        }
        return false;
    }

    /**
     * Why this request is refused, or null if it may go. {@code target} is origin-form (path and query), made
     * canonical by {@link RegistryTargets} first.
     */
    public String refusal(String host, String method, String target) {
        String m = method.toUpperCase(Locale.ROOT);
        int q = target.indexOf('?');
        String path = q < 0 ? target : target.substring(0, q);
        String query = q < 0 ? "" : target.substring(q + 1);
        if (kind == Kind.GIT && apiHost(host)) {
            if (m.equals("GET") || m.equals("HEAD") || m.equals("OPTIONS") || apiWriteAllowed(path)) return null;
            return "code host API '" + host + "' takes writes from workspaces only under /repos/ of " + (pushRepos.isEmpty() ? "no repository"
                    : String.join(", ", pushRepos)) + " (registryRules.git.pushRepos): " + HostNames.printable(method + " "
                    + (path.length() > 120 ? path.substring(0, 120) + "..." : path)) + " (REST write) refused";
        }
        String what = switch (kind) {
            case NPM -> npm(m, path);
            case PYPI -> m.equals("GET") || m.equals("HEAD") ? null : "upload";
            case MAVEN -> m.equals("GET") || m.equals("HEAD") ? null : "deploy";
            case GIT -> git(path, query);
        };
        if (what == null) return null;
        String shown = HostNames.printable(method + " " + (path.length() > 120 ? path.substring(0, 120) + "..." : path));
        if (kind == Kind.GIT) {
            return "git host '" + host + "' accepts pushes from workspaces only to " + (pushRepos.isEmpty() ? "no repository"
                    : String.join(", ", pushRepos)) + " (registryRules.git.pushRepos): " + shown + " refused";
        }
        return kind.label() + " registry '" + host + "' is read-only for workspaces: " + shown + " (" + what + ") refused";
    }

    private static String npm(String m, String path) {
        if (m.equals("GET") || m.equals("HEAD")) return null;
        if (m.equals("POST") && path.startsWith("/-/npm/v1/security/")) return null; // npm audit, part of npm install
        if (path.startsWith("/-/user/") || path.startsWith("/-/v1/login")) return "login";
        if (path.startsWith("/-/npm/v1/tokens")) return "token";
        if (path.contains("/dist-tags")) return "dist-tag";
        if (path.startsWith("/-/org/") || path.startsWith("/-/team/")) return "owner";
        if (m.equals("DELETE") || path.contains("/-rev/")) return "unpublish or owner change";
        if (m.equals("PUT")) return "publish";
        return "write";
    }

    private String git(String path, String query) {
        String p = path.length() > 1 && path.endsWith("/") ? path.substring(0, path.length() - 1) : path;
        boolean push = p.toLowerCase(Locale.ROOT).endsWith("/git-receive-pack") || receivePackAsked(query);
        if (!push) return null;
        String repo = p.replaceFirst("^/", "").replaceFirst("(?i)/(info/refs|git-receive-pack)$", "").replaceFirst("\\.git$", "");
        return listed(repo) ? null : "push";
    }

    private boolean listed(String repo) {
        for (String r : pushRepos) if (r.replaceFirst("\\.git$", "").equalsIgnoreCase(repo.replaceFirst("\\.git$", ""))) return true;
        return false;
    }

    /** Does the query ask for the receive-pack service, in any spelling git's backend would decode? Undecodable: yes. */
    private static boolean receivePackAsked(String query) {
        for (String param : query.split("[&;]")) {
            int eq = param.indexOf('=');
            try {
                String key = java.net.URLDecoder.decode(eq < 0 ? param : param.substring(0, eq), java.nio.charset.StandardCharsets.UTF_8);
                String value = eq < 0 ? "" : param.substring(eq + 1);
                for (int i = 0; i < 4 && value.indexOf('%') >= 0; i++) { // a server in front may decode once more: so do we
                    value = java.net.URLDecoder.decode(value, java.nio.charset.StandardCharsets.UTF_8);
                }
                if (key.trim().equalsIgnoreCase("service") && value.trim().toLowerCase(Locale.ROOT).contains("receive-pack")) return true;
            } catch (IllegalArgumentException e) {
                return true;
            }
        }
        return false;
    }

    /** A REST write under /repos/OWNER/REPO (or GitHub Enterprise's /api/v3/repos/...) of a listed repository. */
    private boolean apiWriteAllowed(String path) {
        java.util.regex.Matcher m = API_REPO.matcher(path);
        return m.matches() && listed(m.group(1) + "/" + m.group(2));
    }

    private static final java.util.regex.Pattern API_REPO = java.util.regex.Pattern.compile("(?:/api/v3)?/repos/([^/]+)/([^/]+)(?:/.*)?");

    @Override
    public String toString() {
        return "RegistryRule[" + kind.label() + " " + hosts + (apiHosts.isEmpty() ? "" : " api " + apiHosts) + (pushRepos.isEmpty() ? "" : " push " + pushRepos)
                + (minReleaseAge == null ? "" : " minReleaseAge " + minReleaseAge + (exempt.isEmpty() ? "" : " exempt " + exempt)) + "]";
    }
}
