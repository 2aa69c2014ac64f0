package dev.berth.proxy;

import dev.berth.proxy.net.HostNames;
import dev.berth.proxy.policy.Advisories;
import dev.berth.proxy.policy.ApprovalSettings;
import dev.berth.proxy.policy.HostPattern;
import dev.berth.proxy.policy.InternalHosts;
import dev.berth.proxy.policy.Policy;
import dev.berth.proxy.policy.Presets;
import dev.berth.proxy.policy.RegistryRule;
import dev.berth.proxy.policy.SecretBinding;
import dev.berth.proxy.session.Settings;
import dev.berth.proxy.session.Shaping;
import java.time.Duration;
import java.util.Objects;

/**
 * Operator-level settings: the policy ceiling, limits, and the two unsafe switches. Built in
 * code or loaded from JSON by {@link ConfigLoader}. Immutable.
 *
 * <p>Limits and why each exists:
 * <ul>
 *   <li>maxHeaderBytes / maxHeaderCount: bound memory per request head (431 otherwise).</li>
 *   <li>headerTimeout: a request head (or the TLS ClientHello after CONNECT) must arrive within
 *       this time once started; defeats slowloris.</li>
 *   <li>idleTimeout: no bytes in either direction for this long closes the connection.</li>
 *   <li>maxTunnelsPerWorkspace: concurrent upstream connections (CONNECT tunnels and plain-HTTP
 *       upstreams) per workspace; bounds fan-out from one workspace.</li>
 *   <li>maxBytesPerWorkspace / quotaWindow: a byte bucket (up + down, heads and bodies) per workspace, refilled over
 *       the window; maxBytesPerTenant the same over all of a tenant's workspaces.</li>
 *   <li>maxConnectsPerSecond / connectBurst (and per tenant): connection setups as a token bucket; a setup over the
 *       rate waits for its turn up to maxShapingDelay, and is refused only when it would wait longer.</li>
 *   <li>dnsTimeout / connectTimeout: a slow upstream cannot pin proxy resources.</li>
 * </ul>
 */
public final class ProxyConfig {
    private final Policy ceiling;
    private final int maxHeaderBytes;
    private final int maxHeaderCount;
    private final Duration headerTimeout;
    private final Duration idleTimeout;
    private final int maxTunnelsPerWorkspace;
    private final long maxBytesPerWorkspace;
    private final Duration dnsTimeout;
    private final Duration connectTimeout;
    private final boolean unsafeAllowLoopbackUpstreams;
    private final java.util.Set<Integer> tlsPorts;
    private final java.util.Map<String, SecretBinding> secrets;
    private final java.util.List<java.nio.file.Path> upstreamTrustFiles;
    private final Duration quotaWindow;
    private final int maxConnectsPerSecond;
    private final Shaping shaping;
    private final InternalHosts internalHosts;
    private final Duration placeholderTtl;
    private final java.util.List<RegistryRule> registryRules;
    private final Advisories advisories;
    private final int maxMetadataBytes;
    private final ApprovalSettings approval;
    private final java.util.Map<String, Policy> presetMirrors;

    private ProxyConfig(Builder b) {
        this.ceiling = b.ceiling;
        this.maxHeaderBytes = b.maxHeaderBytes;
        this.maxHeaderCount = b.maxHeaderCount;
        this.headerTimeout = b.headerTimeout;
        this.idleTimeout = b.idleTimeout;
        this.maxTunnelsPerWorkspace = b.maxTunnelsPerWorkspace;
        this.maxBytesPerWorkspace = b.maxBytesPerWorkspace;
        this.dnsTimeout = b.dnsTimeout;
        this.connectTimeout = b.connectTimeout;
        this.unsafeAllowLoopbackUpstreams = b.unsafeAllowLoopbackUpstreams;
        this.tlsPorts = java.util.Set.copyOf(b.tlsPorts);
        this.secrets = java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(b.secrets));
        this.upstreamTrustFiles = java.util.List.copyOf(b.upstreamTrustFiles);
        this.quotaWindow = b.quotaWindow;
        this.maxConnectsPerSecond = b.maxConnectsPerSecond;
        this.internalHosts = b.internalHosts;
        this.shaping = new Shaping(b.connectBurst, b.maxShapingDelay, b.maxConnectsPerSecondPerTenant, b.connectBurstPerTenant, b.maxBytesPerTenant);
        this.placeholderTtl = b.placeholderTtl;
        this.registryRules = java.util.List.copyOf(b.registryRules);
        this.advisories = b.advisories;
        this.maxMetadataBytes = b.maxMetadataBytes;
        this.approval = b.approval;
        java.util.Map<String, Policy> mirrors = new java.util.LinkedHashMap<>();
        b.presetMirrors.forEach((k, v) -> mirrors.put(k, new Policy(v)));
        this.presetMirrors = java.util.Collections.unmodifiableMap(mirrors);
    }

    /** Hosts a human may grant to one workspace for a while (MCP elicitation), and the durations offered. */
    public ApprovalSettings approval() { return approval; }

    /** The operator's mirrors for presets (config {@code presetMirrors}): what {@code preset:NAME} stands for instead of the public hosts. */
    public java.util.Map<String, Policy> presetMirrors() { return presetMirrors; }

    /** The malicious-package advisory feed (OSV) the registry rules enforce; empty by default. */
    public Advisories advisories() { return advisories; }

    /**
     * Largest registry metadata response (decoded) the proxy buffers to filter it (release age, advisories); a larger
     * one is refused, since passing it unfiltered would let a hidden version through.
     */
    public int maxMetadataBytes() { return maxMetadataBytes; }

    /** Package-aware rules for registry and git hosts (read-only; git pushes only to listed repositories). */
    public java.util.List<RegistryRule> registryRules() { return registryRules; }

    /** The settings the connection machinery reads, taken from this configuration. */
    Settings settings() {
        return new Settings(ceiling, maxHeaderBytes, maxHeaderCount, headerTimeout, idleTimeout, connectTimeout, dnsTimeout, maxTunnelsPerWorkspace,
                maxBytesPerWorkspace, quotaWindow, maxConnectsPerSecond, maxMetadataBytes, tlsPorts, registryRules,
                unsafeAllowLoopbackUpstreams, shaping, internalHosts);
    }

    /** Does the proxy terminate TLS for any host (secret bindings or registry rules)? Workspaces then need its CA. */
    public boolean intercepts() {
        return !secrets.isEmpty() || !registryRules.isEmpty();
    }

    public static Builder builder() {
        return new Builder();
    }

    public Policy ceiling() { return ceiling; }
    public int maxHeaderBytes() { return maxHeaderBytes; }
    public int maxHeaderCount() { return maxHeaderCount; }
    public Duration headerTimeout() { return headerTimeout; }
    public Duration idleTimeout() { return idleTimeout; }
    public int maxTunnelsPerWorkspace() { return maxTunnelsPerWorkspace; }
    public long maxBytesPerWorkspace() { return maxBytesPerWorkspace; }
    public Duration dnsTimeout() { return dnsTimeout; }
    public Duration connectTimeout() { return connectTimeout; }
    /** When true, 127.0.0.0/8 and ::1 upstreams are permitted (tests/benchmarks only). */
    public boolean unsafeAllowLoopbackUpstreams() { return unsafeAllowLoopbackUpstreams; }

    /** CONNECT ports whose first bytes must be a TLS ClientHello with SNI == CONNECT host (default 443). */
    public java.util.Set<Integer> tlsPorts() { return tlsPorts; }

    /** Secret bindings by name, in insertion order. */
    public java.util.Map<String, SecretBinding> secrets() { return secrets; }

    /** Extra PEM CA files trusted for upstream TLS of intercepted connections, on top of the JDK default trust store. */
    public java.util.List<java.nio.file.Path> upstreamTrustFiles() { return upstreamTrustFiles; }
    /** The byte quota ({@link #maxBytesPerWorkspace()}) counts per window of this length; at its end egress resumes. */
    public Duration quotaWindow() { return quotaWindow; }
    /** New connections (CONNECTs and upstream dials) a workspace may set up per second; a burst of as many is allowed. */
    public int maxConnectsPerSecond() { return maxConnectsPerSecond; }
    /** Named hosts that may resolve into stated non-public ranges (config {@code internal_hosts}); audited when used. */
    public InternalHosts internalHosts() { return internalHosts; }
    /** Bursts, the longest wait for a turn, and the tenants' quotas. */
    public Shaping shaping() { return shaping; }
    /** Longest life of a credential placeholder, whatever its run does (a background run's grant expires then). */
    public Duration placeholderTtl() { return placeholderTtl; }

    public Builder toBuilder() {
        Builder b = new Builder();
        b.ceiling = ceiling;
        b.maxHeaderBytes = maxHeaderBytes;
        b.maxHeaderCount = maxHeaderCount;
        b.headerTimeout = headerTimeout;
        b.idleTimeout = idleTimeout;
        b.maxTunnelsPerWorkspace = maxTunnelsPerWorkspace;
        b.maxBytesPerWorkspace = maxBytesPerWorkspace;
        b.dnsTimeout = dnsTimeout;
        b.connectTimeout = connectTimeout;
        b.unsafeAllowLoopbackUpstreams = unsafeAllowLoopbackUpstreams;
        b.tlsPorts = tlsPorts;
        b.quotaWindow = quotaWindow;
        b.maxConnectsPerSecond = maxConnectsPerSecond;
        b.internalHosts = internalHosts;
        b.connectBurst = shaping.connectBurst();
        b.maxShapingDelay = shaping.maxDelay();
        b.maxConnectsPerSecondPerTenant = shaping.maxConnectsPerSecondPerTenant();
        b.connectBurstPerTenant = shaping.connectBurstPerTenant();
        b.maxBytesPerTenant = shaping.maxBytesPerTenant();
        b.placeholderTtl = placeholderTtl;
        b.registryRules.addAll(registryRules);
        b.advisories = advisories;
        b.maxMetadataBytes = maxMetadataBytes;
        b.approval = approval;
        presetMirrors.forEach((k, v) -> b.presetMirrors.put(k, v.entries()));
        b.secrets.putAll(secrets);
        b.upstreamTrustFiles = upstreamTrustFiles;
        return b;
    }

    public static final class Builder {
        private Policy ceiling = Policy.denyAll();
        private int maxHeaderBytes = 32 * 1024;
        private int maxHeaderCount = 100;
        private Duration headerTimeout = Duration.ofSeconds(10);
        private Duration idleTimeout = Duration.ofMinutes(5);
        private int maxTunnelsPerWorkspace = 256;
        private long maxBytesPerWorkspace = 20L * 1024 * 1024 * 1024;
        private Duration dnsTimeout = Duration.ofSeconds(5);
        private Duration connectTimeout = Duration.ofSeconds(10);
        private boolean unsafeAllowLoopbackUpstreams;
        private java.util.Set<Integer> tlsPorts = java.util.Set.of(443);
        private final java.util.Map<String, SecretBinding> secrets = new java.util.LinkedHashMap<>();
        private java.util.List<java.nio.file.Path> upstreamTrustFiles = java.util.List.of();
        private Duration quotaWindow = Duration.ofDays(1);
        private int maxConnectsPerSecond = 100;
        private InternalHosts internalHosts = InternalHosts.NONE;
        /** Named hosts that may resolve into stated non-public ranges; each must be allowed by the ceiling (checked at build). */
        public Builder internalHosts(InternalHosts h) { this.internalHosts = Objects.requireNonNull(h); return this; }
        private int connectBurst = Shaping.DEFAULT.connectBurst();
        private Duration maxShapingDelay = Shaping.DEFAULT.maxDelay();
        private int maxConnectsPerSecondPerTenant = Shaping.DEFAULT.maxConnectsPerSecondPerTenant();
        private int connectBurstPerTenant = Shaping.DEFAULT.connectBurstPerTenant();
        private long maxBytesPerTenant = Shaping.DEFAULT.maxBytesPerTenant();
        private Duration placeholderTtl = Duration.ofHours(12);
        private final java.util.List<RegistryRule> registryRules = new java.util.ArrayList<>();

        private Advisories advisories = Advisories.none();
        private int maxMetadataBytes = 64 << 20;

        public Builder advisories(Advisories a) { this.advisories = Objects.requireNonNull(a); return this; }
        public Builder maxMetadataBytes(int v) { this.maxMetadataBytes = positive(v, "maxMetadataBytes"); return this; }
        private ApprovalSettings approval = ApprovalSettings.NONE;
        public Builder approval(ApprovalSettings a) { this.approval = Objects.requireNonNull(a); return this; }
        private final java.util.Map<String, java.util.List<Policy.Entry>> presetMirrors = new java.util.LinkedHashMap<>();
        /** Points {@code preset:NAME} at the operator's own hosts ({@code specs} as in {@link Policy#of}; an unknown preset is refused). */
        public Builder presetMirror(String preset, java.util.Collection<String> specs) {
            return presetMirror(preset, Policy.of(specs).entries());
        }

        /** Points {@code preset:NAME} at the operator's own hosts (an unknown preset name is refused). */
        Builder presetMirror(String preset, java.util.List<Policy.Entry> hosts) {
            if (Presets.get(preset) == null) throw new IllegalArgumentException("unknown preset '" + HostNames.printable(preset) + "' (known: " + Presets.names() + ")");
            this.presetMirrors.put(preset, java.util.List.copyOf(hosts));
            return this;
        }
        public Builder registryRule(RegistryRule r) { this.registryRules.add(Objects.requireNonNull(r)); return this; }

        public Builder quotaWindow(Duration d) { this.quotaWindow = positive(d, "quotaWindow"); return this; }
        public Builder maxConnectsPerSecond(int v) { this.maxConnectsPerSecond = positive(v, "maxConnectsPerSecond"); return this; }
        /** Connection setups a workspace may make at once; the bucket refills at {@link #maxConnectsPerSecond}. */
        public Builder connectBurst(int v) { this.connectBurst = positive(v, "connectBurst"); return this; }
        /** The longest a setup over the rate (or a request while the byte quota is used up) waits before it is refused; 0 = never waits. */
        public Builder maxShapingDelay(Duration d) {
            if (d.isNegative()) throw new IllegalArgumentException("maxShapingDelay must not be negative, got " + d);
            this.maxShapingDelay = d;
            return this;
        }
        public Builder maxConnectsPerSecondPerTenant(int v) { this.maxConnectsPerSecondPerTenant = positive(v, "maxConnectsPerSecondPerTenant"); return this; }
        public Builder connectBurstPerTenant(int v) { this.connectBurstPerTenant = positive(v, "connectBurstPerTenant"); return this; }
        public Builder maxBytesPerTenant(long v) { this.maxBytesPerTenant = positive(v, "maxBytesPerTenant"); return this; }
        public Builder placeholderTtl(Duration d) { this.placeholderTtl = positive(d, "placeholderTtl"); return this; }

        private Builder() {}

        public Builder ceiling(Policy p) { this.ceiling = Objects.requireNonNull(p); return this; }
        public Builder maxHeaderBytes(int v) { this.maxHeaderBytes = positive(v, "maxHeaderBytes"); return this; }
        public Builder maxHeaderCount(int v) { this.maxHeaderCount = positive(v, "maxHeaderCount"); return this; }
        public Builder headerTimeout(Duration d) { this.headerTimeout = positive(d, "headerTimeout"); return this; }
        public Builder idleTimeout(Duration d) { this.idleTimeout = positive(d, "idleTimeout"); return this; }
        public Builder maxTunnelsPerWorkspace(int v) { this.maxTunnelsPerWorkspace = positive(v, "maxTunnelsPerWorkspace"); return this; }
        public Builder maxBytesPerWorkspace(long v) { this.maxBytesPerWorkspace = positive(v, "maxBytesPerWorkspace"); return this; }
        public Builder dnsTimeout(Duration d) { this.dnsTimeout = positive(d, "dnsTimeout"); return this; }
        public Builder connectTimeout(Duration d) { this.connectTimeout = positive(d, "connectTimeout"); return this; }
        /** Tests and benchmarks only. Logged loudly and written to the audit log at start. */
        public Builder unsafeAllowLoopbackUpstreams(boolean v) { this.unsafeAllowLoopbackUpstreams = v; return this; }

        /** Ports that get the SNI check; 443 should stay in the set (tests add their loopback TLS port). */
        public Builder tlsPorts(java.util.Set<Integer> ports) { this.tlsPorts = java.util.Set.copyOf(ports); return this; }

        /**
         * Adds a secret binding. Names and env variables must be unique; at {@link #build} every
         * host of the binding must be allowed by the ceiling on a TLS port.
         */
        public Builder secret(SecretBinding b) {
            Objects.requireNonNull(b, "binding");
            if (secrets.containsKey(b.name())) throw new IllegalArgumentException("duplicate secret '" + b.name() + "'");
            for (SecretBinding o : secrets.values()) {
                if (o.env().equals(b.env())) {
                    throw new IllegalArgumentException("secrets '" + o.name() + "' and '" + b.name() + "' both use env " + b.env());
                }
            }
            secrets.put(b.name(), b);
            return this;
        }

        public Builder upstreamTrustFiles(java.util.List<java.nio.file.Path> pems) {
            this.upstreamTrustFiles = java.util.List.copyOf(pems);
            return this;
        }

        /** @throws IllegalArgumentException if a secret is bound to a host the ceiling does not allow on a TLS port */
        public ProxyConfig build() {
            for (SecretBinding b : secrets.values()) {
                for (int i = 0; i < b.patterns().size(); i++) {
                    // A plain-HTTP binding may be used on any allowed port; otherwise it is only useful on a TLS port.
                    if (!ceiling.covers(b.patterns().get(i), b.unsafeAllowPlainHttp() ? null : tlsPorts)) {
                        throw new IllegalArgumentException("secret '" + b.name() + "' is bound to host " + b.hosts().get(i)
                                + " which the egress allow-list does not allow"
                                + (b.unsafeAllowPlainHttp() ? "" : " (on port " + new java.util.TreeSet<>(tlsPorts) + ")"));
                    }
                }
            }
            for (InternalHosts.Entry e : internalHosts.entries()) {
                try {
                    if (!ceiling.covers(HostPattern.parse(e.host()), null)) {
                        throw new IllegalArgumentException("internal_hosts names host " + e.host() + " which the egress allow-list does not allow; allow it too");
                    }
                } catch (HostNames.InvalidHostException ex) {
                    throw new IllegalArgumentException("internal_hosts: " + ex.getMessage());
                }
            }
            for (int k = 0; k < registryRules.size(); k++) {
                RegistryRule r = registryRules.get(k).defaultHostsWithin(p -> ceiling.covers(p, tlsPorts));
                if (r.hosts().isEmpty()) {
                    throw new IllegalArgumentException("registry rule " + r.kind().label() + " covers its default hosts "
                            + r.kind().defaultHosts() + ", none of which the egress allow-list allows (on port " + new java.util.TreeSet<>(tlsPorts)
                            + "); name the rule's hosts");
                }
                // REST writes of a code host's API are covered where a token is bound to it (without one it takes none)
                r = r.apiHostsBound(api -> secrets.values().stream().anyMatch(b -> b.matchesHost(api)));
                registryRules.set(k, r);
                for (int i = 0; i < r.patterns().size(); i++) {
                    if (!ceiling.covers(r.patterns().get(i), tlsPorts)) {
                        throw new IllegalArgumentException("registry rule " + r.kind().name().toLowerCase(java.util.Locale.ROOT) + " names host "
                                + r.hosts().get(i) + " which the egress allow-list does not allow (on port " + new java.util.TreeSet<>(tlsPorts) + ")");
                    }
                }
            }
            return new ProxyConfig(this);
        }

        private static <T extends Number> T positive(T v, String name) {
            if (v.longValue() <= 0) throw new IllegalArgumentException(name + " must be positive, got " + v);
            return v;
        }

        private static Duration positive(Duration d, String name) {
            if (d.isNegative() || d.isZero()) throw new IllegalArgumentException(name + " must be positive, got " + d);
            return d;
        }
    }
}
