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
    /** The protocol the rule understands. */
    public enum Kind {
        NPM("registry.npmjs.org"), PYPI("pypi.org", "upload.pypi.org"), MAVEN("repo.maven.apache.org", "repo1.maven.org"), GIT("github.com");

        final List<String> defaultHosts;

        Kind(String... hosts) {
            this.defaultHosts = List.of(hosts);
        }

        /** Lowercase name as in the config ({@code npm}, {@code pypi}, ...). */
        public String label() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    private final Kind kind;
    private final List<String> hosts;
    private final List<HostPattern> patterns;
    private final List<String> pushRepos;
    private final java.time.Duration minReleaseAge;
    private final List<String> exempt;

    private RegistryRule(Kind kind, List<String> hosts, List<HostPattern> patterns, List<String> pushRepos,
                         java.time.Duration minReleaseAge, List<String> exempt) {
        this.kind = kind;
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
        return new RegistryRule(kind, hosts, patterns, pushRepos, age == null || age.isZero() ? null : age, ex);
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
        return new RegistryRule(kind, hs, List.copyOf(ps), repos, null, List.of());
    }

    public Kind kind() { return kind; }
    public List<String> hosts() { return hosts; }
    public List<String> pushRepos() { return pushRepos; }
    public List<HostPattern> patterns() { return patterns; }

    public boolean matchesHost(String canonicalHost) {
        try {
            HostNames.Host h = HostNames.normalize(canonicalHost);
            for (HostPattern p : patterns) if (p.matches(h)) return true;
        } catch (HostNames.InvalidHostException e) {
            return false;
        }
        return false;
    }

    /** Why this request is refused, or null if it may go. {@code target} is origin-form (path and query). */
    public String refusal(String host, String method, String target) {
        String m = method.toUpperCase(Locale.ROOT);
        int q = target.indexOf('?');
        String path = q < 0 ? target : target.substring(0, q);
        String query = q < 0 ? "" : target.substring(q + 1);
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
        boolean push = path.endsWith("/git-receive-pack") || query.contains("service=git-receive-pack");
        if (!push) return null;
        String repo = path.replaceFirst("^/", "").replaceFirst("/(info/refs|git-receive-pack)$", "").replaceFirst("\\.git$", "");
        for (String r : pushRepos) if (r.replaceFirst("\\.git$", "").equalsIgnoreCase(repo)) return null;
        return "push";
    }

    @Override
    public String toString() {
        return "RegistryRule[" + kind.label() + " " + hosts + (pushRepos.isEmpty() ? "" : " push " + pushRepos)
                + (minReleaseAge == null ? "" : " minReleaseAge " + minReleaseAge + (exempt.isEmpty() ? "" : " exempt " + exempt)) + "]";
    }
}
