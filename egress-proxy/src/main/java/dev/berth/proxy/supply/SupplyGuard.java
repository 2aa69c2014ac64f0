package dev.berth.proxy.supply;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import dev.berth.proxy.policy.Advisories;
import dev.berth.proxy.policy.MetadataFilter;
import dev.berth.proxy.policy.RegistryPaths;
import dev.berth.proxy.policy.RegistryRule;
import dev.berth.proxy.session.Gatekeeper;
import dev.berth.proxy.session.Session;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;

/**
 * The release-age and advisory checks of the registry rules: which versions a workspace may not see or download, and
 * why. Artifacts (an npm tarball, a PyPI file, a Maven file) are checked before the request goes upstream, against the
 * version's publish time from the registry's own metadata (cached per rule and package for ten minutes; fetched by
 * the proxy itself on a miss, so a client that skips metadata, like {@code npm ci} with a lock file, is checked as
 * well); metadata responses are rewritten by {@link MetadataFilter}. When the publish time cannot be established the
 * version is refused (fail closed), with the reason.
 *
 * <p>Publish times: npm packument {@code time}, PyPI JSON {@code upload_time_iso_8601} (earliest file of the
 * version; PEP 691 {@code upload-time} when every file has one), Maven: the {@code Last-Modified} of the version's
 * POM. Maven metadata is checked from its newest version down and stops at the first version old enough (Maven lists
 * versions in deploy order), so a metadata request costs one HEAD per fresh version plus one.
 *
 * <p>Thread-safe: the cache is Caffeine's; futures complete on Netty threads, callers hop back to their loop.
 */
public final class SupplyGuard {
    private final Advisories advisories;
    private final Supplier<Instant> now;
    private final Cache<String, Map<String, Instant>> times = Caffeine.newBuilder()
            .expireAfterWrite(Duration.ofMinutes(10)).maximumSize(10_000).build();

    public SupplyGuard(Advisories advisories, Supplier<Instant> now) {
        this.advisories = advisories;
        this.now = now;
    }

    /** Does this rule hide or refuse anything beyond writes? */
    public boolean active(RegistryRule rule) {
        return rule.minReleaseAge() != null || advisories.size() > 0;
    }

    private static String cacheKey(RegistryRule rule, String pkg) {
        return rule.kind() + " " + rule.hosts() + " " + RegistryPaths.normalizeName(rule.kind(), pkg);
    }

    /** Why this version is hidden or refused, or null. */
    String verdict(RegistryRule rule, String pkg, String version, Instant published) {
        String adv = advisories.malicious(rule.kind(), pkg, version);
        String name = pkg + (rule.kind() == RegistryRule.Kind.NPM ? "@" : " ") + version;
        if (adv != null) return name + " is listed as malicious by advisory " + adv + " (advisory feed)";
        Duration min = rule.minReleaseAge();
        if (min == null || rule.exempt(pkg)) return null;
        String setting = "registryRules." + rule.kind().label() + ".minReleaseAgeDays";
        if (published == null) {
            return "publish time of " + name + " is not in the registry's metadata, so its age cannot be checked (" + setting + ")";
        }
        if (published.isAfter(now.get().minus(min))) {
            return name + " was published " + published.truncatedTo(ChronoUnit.SECONDS) + ", less than " + days(min) + " ago (" + setting
                    + "; exempt packages with registryRules." + rule.kind().label() + ".exempt)";
        }
        return null;
    }

    private static String days(Duration d) {
        long h = d.toHours();
        return h % 24 == 0 ? (h / 24) + (h == 24 ? " day" : " days") : h + " hours";
    }

    /** The check of one version's artifact, before it is requested: the refusal reason, or null. */
    public CompletableFuture<String> checkVersion(Session s, Gatekeeper.Vetted v, boolean tls, RegistryRule rule, RegistryPaths.Request rq) {
        String adv = verdict(rule, rq.pkg(), rq.version(), Instant.EPOCH);
        if (adv != null || rule.minReleaseAge() == null || rule.exempt(rq.pkg())) return CompletableFuture.completedFuture(adv);
        Map<String, Instant> known = times.getIfPresent(cacheKey(rule, rq.pkg()));
        if (known != null && known.containsKey(rq.version())) {
            return CompletableFuture.completedFuture(verdict(rule, rq.pkg(), rq.version(), known.get(rq.version())));
        }
        CompletableFuture<Map<String, Instant>> fetched;
        try {
            fetched = switch (rule.kind()) {
                case NPM -> npmTimes(s, v, tls, rule, rq.pkg());
                case PYPI -> pypiTimes(s, v, tls, rule, rq.pkg());
                case MAVEN -> mavenTime(s, v, tls, rule, rq.pkg(), rq.version(), rq.flavor()).thenApply(t -> {
                    Map<String, Instant> m = new HashMap<>();
                    if (t != null) m.put(rq.version(), t);
                    return m;
                });
                case GIT -> CompletableFuture.completedFuture(Map.of());
            };
        } catch (RuntimeException e) {
            // a request the proxy cannot even form (a crafted name) fails now, with the reason, instead of hanging
            fetched = CompletableFuture.failedFuture(new IllegalStateException("the metadata request cannot be made (" + e.getClass().getSimpleName() + ")"));
        }
        return fetched.handle((m, err) -> {
            if (err != null) {
                Throwable c = err instanceof java.util.concurrent.CompletionException && err.getCause() != null ? err.getCause() : err;
                return "could not read the publish time of " + rq.pkg() + " " + rq.version() + " from " + v.host() + ": " + c.getMessage()
                        + " (registryRules." + rule.kind().label() + ".minReleaseAgeDays; refused rather than unchecked)";
            }
            return verdict(rule, rq.pkg(), rq.version(), m.get(rq.version()));
        });
    }

    private void remember(RegistryRule rule, String pkg, Map<String, Instant> m) {
        String key = cacheKey(rule, pkg);
        Map<String, Instant> merged = new HashMap<>();
        Map<String, Instant> old = times.getIfPresent(key);
        if (old != null) merged.putAll(old);
        merged.putAll(m);
        times.put(key, Map.copyOf(merged));
    }

    private CompletableFuture<Map<String, Instant>> npmTimes(Session s, Gatekeeper.Vetted v, boolean tls, RegistryRule rule, String pkg) {
        String path = "/" + (pkg.startsWith("@") ? "@" + URLEncoder.encode(pkg.substring(1), StandardCharsets.UTF_8) : pkg);
        return SideFetch.fetch(s, v, tls, "GET", path, "application/json").thenApply(r -> {
            if (r.status() != 200) throw new IllegalStateException("GET " + path + " answered " + r.status());
            Map<String, Instant> m = MetadataFilter.npmTimes(new tools.jackson.databind.ObjectMapper().readTree(r.body()));
            remember(rule, pkg, m);
            return m;
        });
    }

    /**
     * PyPI's JSON API lives on the index host, not on the host that serves the files: a file host's side fetch goes to
     * the rule's metadata host, vetted like any name (the ceiling allows it: every rule host is checked at load).
     */
    private CompletableFuture<Map<String, Instant>> pypiTimes(Session s, Gatekeeper.Vetted v, boolean tls, RegistryRule rule, String pkg) {
        String path = "/pypi/" + segment(pkg) + "/json";
        String meta = rule.metadataHost(v.host());
        CompletableFuture<Gatekeeper.Vetted> where = meta.equals(v.host()) ? CompletableFuture.completedFuture(v)
                : s.shared().gatekeeper().decide(s.config().ceiling(), meta, v.port()).thenApply(m -> {
                    if (!m.allowed()) throw new IllegalStateException("metadata host " + meta + " refused: " + m.reason());
                    return m;
                });
        return where.thenCompose(m -> SideFetch.fetch(s, m, tls, "GET", path, "application/json")).thenApply(r -> {
            if (r.status() != 200) throw new IllegalStateException("GET " + path + " answered " + r.status());
            Map<String, Instant> m = MetadataFilter.pypiJsonTimes(new tools.jackson.databind.ObjectMapper().readTree(r.body()));
            remember(rule, pkg, m);
            return m;
        });
    }

    /** Last-Modified of the version's POM, cached; null if the registry does not say. */
    private CompletableFuture<Instant> mavenTime(Session s, Gatekeeper.Vetted v, boolean tls, RegistryRule rule, String pkg, String version,
                                                 String dir) {
        Map<String, Instant> known = times.getIfPresent(cacheKey(rule, pkg));
        if (known != null && known.containsKey(version)) return CompletableFuture.completedFuture(known.get(version));
        String artifact = pkg.substring(pkg.indexOf(':') + 1);
        String path = dir + segment(artifact) + "-" + segment(version) + ".pom";
        return SideFetch.fetch(s, v, tls, "HEAD", path, "*/*").thenApply(r -> {
            if (r.status() != 200) throw new IllegalStateException("HEAD " + path + " answered " + r.status());
            if (r.lastModified() != null) remember(rule, pkg, Map.of(version, r.lastModified()));
            return r.lastModified();
        });
    }

    /** One path segment, escaped: names come from the workspace's request and must not shape the proxy's own. */
    private static String segment(String s) {
        return URLEncoder.encode(s, StandardCharsets.UTF_8).replace("+", "%20");
    }

    /**
     * Filters one metadata response body (already decoded). Completes with the body to send and what was hidden; fails
     * (and the response is then refused) when the body cannot be parsed or publish times cannot be read.
     */
    public CompletableFuture<MetadataFilter.Result> filter(Session s, Gatekeeper.Vetted v, boolean tls, RegistryRule rule, RegistryPaths.Request rq,
                                                    String contentType, byte[] body) {
        String pkg = rq.pkg();
        MetadataFilter.Verdict verdict = (ver, t) -> verdict(rule, pkg, ver, t);
        boolean needTimes = rule.minReleaseAge() != null && !rule.exempt(pkg);
        try {
            switch (rule.kind()) {
                case NPM -> {
                    MetadataFilter.Result r = MetadataFilter.npm(body, verdict);
                    remember(rule, pkg, MetadataFilter.npmTimes(new tools.jackson.databind.ObjectMapper().readTree(body)));
                    return CompletableFuture.completedFuture(r);
                }
                case PYPI -> {
                    if (rq.flavor().equals("json")) {
                        MetadataFilter.Result r = MetadataFilter.pypiJson(body, verdict);
                        remember(rule, pkg, MetadataFilter.pypiJsonTimes(new tools.jackson.databind.ObjectMapper().readTree(body)));
                        return CompletableFuture.completedFuture(r);
                    }
                    boolean json = contentType != null && contentType.contains("json");
                    Map<String, Instant> own = json ? MetadataFilter.pypiSimpleJsonTimes(body) : null;
                    CompletableFuture<Map<String, Instant>> t = own != null ? CompletableFuture.completedFuture(own)
                            : needTimes ? pypiTimes(s, v, tls, rule, pkg) : CompletableFuture.completedFuture(Map.of());
                    if (own != null) remember(rule, pkg, own);
                    return t.thenApply(m -> json ? MetadataFilter.pypiSimpleJson(body, m, verdict) : MetadataFilter.pypiSimpleHtml(body, m, verdict));
                }
                case MAVEN -> {
                    List<String> versions = MetadataFilter.mavenVersions(body);
                    CompletableFuture<Map<String, Instant>> t = needTimes
                            ? mavenTimes(s, v, tls, rule, rq, new ArrayList<>(versions), new HashMap<>())
                            : CompletableFuture.completedFuture(Map.of());
                    return t.thenApply(m -> MetadataFilter.maven(body, m, (ver, time) -> {
                        // versions below the first old-enough one are older still (deploy order): no HEAD was made for them
                        if (needTimes && !m.containsKey(ver)) return verdict(rule, pkg, ver, Instant.EPOCH);
                        return verdict.hide(ver, time);
                    }));
                }
                default -> {
                    return CompletableFuture.completedFuture(new MetadataFilter.Result(body, List.of()));
                }
            }
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(new IllegalStateException(rule.kind().label() + " metadata for " + pkg
                    + " could not be parsed (" + e.getClass().getSimpleName() + ")"));
        }
    }

    /** Walks versions newest first (last in the list), HEADing each POM, until one is old enough. */
    private CompletableFuture<Map<String, Instant>> mavenTimes(Session s, Gatekeeper.Vetted v, boolean tls, RegistryRule rule,
                                                               RegistryPaths.Request rq, List<String> left, Map<String, Instant> acc) {
        if (left.isEmpty()) return CompletableFuture.completedFuture(acc);
        String ver = left.removeLast();
        String dir = rq.flavor() + ver + "/";
        return mavenTime(s, v, tls, rule, rq.pkg(), ver, dir).thenCompose(t -> {
            acc.put(ver, t);
            if (t != null && !t.isAfter(now.get().minus(rule.minReleaseAge()))) return CompletableFuture.completedFuture(acc);
            return mavenTimes(s, v, tls, rule, rq, left, acc);
        });
    }
}
