package dev.berth.proxy.policy;

import dev.berth.proxy.net.HostNames;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

/**
 * An allowlist: a set of (host pattern, ports) entries. Empty means deny everything, which is
 * the default. Immutable.
 *
 * <p>The operator's config is the ceiling; a workspace and then a run may only {@link #narrow}
 * it. Narrowing is a true set intersection of (host, port) pairs, so no combination of
 * requested entries can produce a pair the ceiling did not already allow.
 */
public final class Policy {
    /** Allowed host/port set for one pattern. */
    public record Entry(HostPattern host, Set<Integer> ports) {
        public Entry {
            ports = Set.copyOf(new TreeSet<>(ports));
        }

        @Override
        public String toString() {
            return host + ":" + new TreeSet<>(ports);
        }
    }

    private static final Policy DENY_ALL = new Policy(List.of());
    private final List<Entry> entries;

    public Policy(List<Entry> entries) {
        this.entries = List.copyOf(entries);
    }

    /** The default policy: nothing is reachable. */
    public static Policy denyAll() {
        return DENY_ALL;
    }

    /**
     * Builds a policy from entries such as {@code "registry.npmjs.org"}, {@code
     * "*.github.com:443"}, {@code "deb.debian.org:80,443"} or {@code "preset:npm"}. Port defaults to
     * 443. Intended for workspace/run narrowing requests; the result must still be passed through
     * {@link #narrow} against the ceiling.
     *
     * @throws IllegalArgumentException with a reason naming the bad entry
     */
    public static Policy of(Collection<String> specs) {
        return of(specs, java.util.Map.of());
    }

    /**
     * As {@link #of(Collection)}, with the operator's preset mirrors: {@code "preset:NAME"} stands for
     * {@code mirrors.get(NAME)} where the operator pointed that preset at its own mirror hosts (config
     * {@code presetMirrors}), else for the public hosts the preset names.
     */
    public static Policy of(Collection<String> specs, java.util.Map<String, Policy> mirrors) {
        List<Entry> out = new ArrayList<>();
        for (String spec : specs) {
            if (spec.startsWith("preset:")) {
                String name = spec.substring(7);
                List<Entry> preset = mirrors.containsKey(name) ? mirrors.get(name).entries() : Presets.get(name);
                if (preset == null) throw new IllegalArgumentException("unknown preset '" + HostNames.printable(name) + "' (known: " + Presets.names() + ")");
                out.addAll(preset);
                continue;
            }
            String hostPart = spec;
            Set<Integer> ports = Set.of(443);
            int colon = spec.lastIndexOf(':');
            if (colon > 0 && !spec.endsWith("]") && spec.indexOf(':') == colon) {
                hostPart = spec.substring(0, colon);
                ports = parsePorts(spec.substring(colon + 1), spec);
            } else if (spec.startsWith("[") && spec.contains("]:")) {
                int close = spec.indexOf("]:");
                hostPart = spec.substring(0, close + 1);
                ports = parsePorts(spec.substring(close + 2), spec);
            }
            try {
                out.add(new Entry(HostPattern.parse(hostPart), ports));
            } catch (HostNames.InvalidHostException e) {
                throw new IllegalArgumentException("invalid policy entry '" + HostNames.printable(spec) + "': " + e.getMessage());
            }
        }
        return new Policy(out);
    }

    static Set<Integer> parsePorts(String list, String spec) {
        Set<Integer> ports = new TreeSet<>();
        for (String p : list.split(",", -1)) {
            int port;
            try {
                port = Integer.parseInt(p.trim());
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("invalid port '" + HostNames.printable(p) + "' in entry '" + HostNames.printable(spec) + "'");
            }
            ports.add(checkPort(port, spec));
        }
        return ports;
    }

    static int checkPort(int port, String spec) {
        if (port < 1 || port > 65535) {
            throw new IllegalArgumentException("port " + port + " out of range 1-65535 in entry '" + HostNames.printable(spec) + "'");
        }
        return port;
    }

    /**
     * Intersection of this policy (the ceiling) with {@code requested}. Never larger than either.
     */
    public Policy narrow(Policy requested) {
        List<Entry> out = new ArrayList<>();
        for (Entry mine : entries) {
            for (Entry theirs : requested.entries) {
                HostPattern h = mine.host().intersect(theirs.host());
                if (h == null) continue;
                Set<Integer> ports = new TreeSet<>(mine.ports());
                ports.retainAll(theirs.ports());
                if (!ports.isEmpty()) out.add(new Entry(h, ports));
            }
        }
        return new Policy(out);
    }

    /** Policy verdict for a canonical host and port; reason names the host/port either way. */
    public Verdict check(HostNames.Host host, int port) {
        Set<Integer> portsForHost = new TreeSet<>();
        for (Entry e : entries) {
            if (e.host().matches(host)) {
                if (e.ports().contains(port)) {
                    return new Verdict(true, "host '" + host.canonical() + "' port " + port + " allowed by entry '" + e.host() + "'");
                }
                portsForHost.addAll(e.ports());
            }
        }
        if (!portsForHost.isEmpty()) {
            return new Verdict(false, "port " + port + " not allowed for host '" + host.canonical() + "' (allowed ports: " + portsForHost + ")");
        }
        if (host.isLiteral()) {
            return new Verdict(false, "IP literal '" + host.canonical() + "' is not named by any allowlist entry");
        }
        return new Verdict(false, "host '" + host.canonical() + "' matches no allowlist entry");
    }

    public record Verdict(boolean allowed, String reason) {}

    /** True if one entry allows every name {@code pattern} matches on at least one of {@code ports} (null: any port). */
    public boolean covers(HostPattern pattern, Set<Integer> ports) {
        for (Entry e : entries) {
            if (pattern.equals(e.host().intersect(pattern)) && (ports == null || e.ports().stream().anyMatch(ports::contains))) return true;
        }
        return false;
    }

    /**
     * Suffixes under which anyone can get a name of their own (a bucket, a repository, an app): a {@code *.suffix}
     * entry for one of them allows every stranger's content there, which is how a dependency's install hook fetches
     * a second stage or drops stolen data. Not refused (an operator may mean it), but warned about at start.
     */
    static final List<String> SHARED_SUFFIXES = List.of("s3.amazonaws.com", "amazonaws.com", "githubusercontent.com", "github.io",
            "gitlab.io", "blob.core.windows.net", "web.core.windows.net", "azurewebsites.net", "storage.googleapis.com",
            "appspot.com", "cloudfront.net", "herokuapp.com", "pages.dev", "workers.dev", "vercel.app", "netlify.app",
            "ngrok.io", "ngrok-free.app", "r2.dev", "firebaseapp.com", "web.app", "glitch.me", "repl.co", "onrender.com",
            "fly.dev", "trycloudflare.com");

    /**
     * One warning per {@code *.suffix} entry at or under an attacker-ownable suffix ({@link #SHARED_SUFFIXES}), e.g.
     * "allowlist entry '*.githubusercontent.com:[443]' admits names anyone can own under githubusercontent.com ...".
     */
    public List<String> sharedSuffixWarnings() {
        return sharedSuffixWarnings("allowlist entry");
    }

    /** As {@link #sharedSuffixWarnings()}, naming the entries as {@code what} (e.g. "approval.hosts entry"). */
    public List<String> sharedSuffixWarnings(String what) {
        List<String> out = new java.util.ArrayList<>();
        for (Entry e : entries) {
            String w = sharedSuffixWarning(e.host(), what + " '" + e + "'");
            if (w != null) out.add(w);
        }
        return out;
    }

    /** A warning when {@code p} is a wildcard at or under a suffix where anyone can own a name, else null. */
    public static String sharedSuffixWarning(HostPattern p, String what) {
        if (!p.wildcard()) return null;
        String suffix = p.suffixOrName();
        for (String shared : SHARED_SUFFIXES) {
            if (suffix.equals(shared) || suffix.endsWith("." + shared)) {
                return what + " admits names anyone can own under " + shared
                        + " (buckets, repositories, apps of strangers): list the exact hosts you need instead";
            }
        }
        return null;
    }

    /** Public (non-internal) view of the entries, e.g. {@code "*.github.com:[443]"}. */
    public List<String> describe() {
        return entries.stream().map(Entry::toString).toList();
    }

    public boolean isEmpty() {
        return entries.isEmpty();
    }

    public List<Entry> entries() {
        return entries;
    }

    @Override
    public String toString() {
        return "Policy" + describe();
    }
}
