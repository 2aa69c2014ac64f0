package dev.berth.mcp;

import com.fasterxml.jackson.annotation.JsonProperty;
import dev.berth.engine.api.Tenant;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.DeserializationFeature;
import tools.jackson.databind.exc.UnrecognizedPropertyException;
import tools.jackson.databind.json.JsonMapper;

/**
 * The operator's configuration file for {@code berth http} (JSON). Every section is a record, so a new section (the
 * egress policy, for one) is one more component here and its own record. Unknown keys are refused, never ignored: a
 * misspelt {@code allowed_origins} must not silently fall back to a default. Relative paths inside the file are
 * resolved against the file's folder. Keys are snake_case throughout; the egress section still reads its old camelCase
 * spellings, with one warning per key per load. Every key, its default and range: {@code docs/operator-config.md}.
 * The {@code fleet} section's record and rules are the fleet module's ({@link dev.berth.fleet.FleetConfig}).
 */
public record OperatorConfig(Http http, Auth auth, Map<String, TenantConfig> tenants, tools.jackson.databind.JsonNode egress,
                             Guard guard, LifecycleConfig lifecycle, Audit audit, Metrics metrics, Pool pool,
                             @JsonProperty("project_roots") List<String> projectRoots, dev.berth.fleet.FleetConfig fleet) {

    public OperatorConfig(Http http, Auth auth, Map<String, TenantConfig> tenants) {
        this(http, auth, tenants, null, null, null, null, null, null, null, null);
    }

    /**
     * Directories of the server's machine that open_workspace {from_directory} may copy from and export_changes
     * {to: branch} may write a branch into, besides the roots the MCP client declares (stdio only). Absolute, or
     * relative to the config file's folder; none by default.
     */
    public List<java.nio.file.Path> projectRootPaths() {
        return projectRoots == null ? List.of() : projectRoots.stream().map(java.nio.file.Path::of).toList();
    }

    /**
     * @param onFailure what a tool call does when its audit record cannot be written: "refuse" (default: the call fails
     *                  with the reason, nothing runs unrecorded) or "continue" (it runs unrecorded; the error is logged)
     */
    public record Audit(@JsonProperty("on_failure") String onFailure) {}

    /**
     * The Prometheus endpoint {@code /metrics} of {@code berth http}; absent = no endpoint.
     *
     * @param tokenSha256 SHA-256 (hex) of the operator's scrape token; tenant tokens never open it
     */
    public record Metrics(@JsonProperty("token_sha256") String tokenSha256) {}

    public dev.berth.engine.audit.AuditTrail.OnFailure auditOnFailure() {
        String v = audit == null || audit.onFailure() == null ? "refuse" : audit.onFailure();
        return dev.berth.engine.audit.AuditTrail.OnFailure.valueOf(v.toUpperCase(java.util.Locale.ROOT));
    }

    /**
     * When idle workspaces are parked or closed and ephemeral ones expire, in seconds (0 = never), and how many
     * workspaces may be live at once over all tenants. Absent fields keep Berth's defaults (park after 900 s idle,
     * close an ephemeral one after 3600 s idle, no TTL, 64 live workspaces, 16 forks per {@code open_workspace
     * {count}}); in {@code tenants.<id>.lifecycle}
     * they keep the server-wide values. {@code ttl_s} applies to ephemeral workspaces only (see the engine's
     * LifecyclePolicy for why).
     */
    public record LifecycleConfig(@JsonProperty("idle_park_s") Long idleParkSeconds,
                                  @JsonProperty("idle_close_s") Long idleCloseSeconds,
                                  @JsonProperty("ttl_s") Long ttlSeconds,
                                  @JsonProperty("max_live_workspaces") Integer maxLiveWorkspaces,
                                  @JsonProperty("max_forks_per_open") Integer maxForksPerOpen) {
        dev.berth.engine.api.LifecyclePolicy over(dev.berth.engine.api.LifecyclePolicy base) {
            return base.with(idleParkSeconds, idleCloseSeconds, ttlSeconds);
        }
    }

    /** The server-wide lifecycle policy. */
    public dev.berth.engine.api.LifecyclePolicy lifecyclePolicy() {
        return lifecycle == null ? dev.berth.engine.api.LifecyclePolicy.DEFAULT : lifecycle.over(dev.berth.engine.api.LifecyclePolicy.DEFAULT);
    }

    /** Tenants whose lifecycle differs from the server's, with their whole policy. */
    public Map<String, dev.berth.engine.api.LifecyclePolicy> tenantLifecycle() {
        Map<String, dev.berth.engine.api.LifecyclePolicy> out = new LinkedHashMap<>();
        if (tenants == null) return out;
        for (var e : tenants.entrySet()) {
            if (e.getValue() != null && e.getValue().lifecycle() != null) out.put(e.getKey(), e.getValue().lifecycle().over(lifecyclePolicy()));
        }
        return out;
    }

    /** Live workspaces at most, over all tenants. */
    public int maxLiveWorkspaces() {
        return lifecycle == null || lifecycle.maxLiveWorkspaces() == null ? dev.berth.engine.api.EngineConfig.DEFAULT_MAX_WORKSPACES
                : lifecycle.maxLiveWorkspaces();
    }

    /**
     * The warm pool: {@code size} fresh sandboxes kept started per available isolation level (default resources),
     * claimed by fresh opens, within {@code memory_mib} (counted as the members' memory limits; the default level
     * is filled first). 0 = no pool. Absent: the server's default, 1 per level (not microVMs without KVM) within
     * 2048 MiB or an eighth of the machine's memory ({@link dev.berth.engine.api.TemplateSettings#serverDefault}). A
     * size given here covers microVMs without KVM too. A pool that cannot fit the machine's memory, or a budget
     * larger than it, is refused at start with the numbers.
     */
    public record Pool(Integer size, @JsonProperty("memory_mib") Long memoryMib) {
        public Pool(Integer size) { this(size, null); }
    }

    /** How many workspaces one {@code open_workspace {from_snapshot, count}} may fork, and the warm pool. */
    public dev.berth.engine.api.TemplateSettings templates() {
        int forks = lifecycle == null || lifecycle.maxForksPerOpen() == null ? dev.berth.engine.api.TemplateSettings.DEFAULT_FORK_LIMIT
                : lifecycle.maxForksPerOpen();
        var dflt = dev.berth.engine.api.TemplateSettings.serverDefault(forks);
        if (pool == null || (pool.size() == null && pool.memoryMib() == null)) return dflt;
        return new dev.berth.engine.api.TemplateSettings(forks, pool.size() == null ? dflt.poolSize() : pool.size(),
                pool.memoryMib() == null ? (pool.size() == null ? dflt.poolMemoryMiB() : Long.MAX_VALUE) : pool.memoryMib(),
                pool.size() != null);
    }

    /**
     * What happens when a run changes agent configuration files in a workspace: "report" (default) or "revert"
     * (they are read-only to runs), or "off".
     */
    public record Guard(String mode) {}

    /** Raised for a config that cannot be used; the message names the file, the key and the value. */
    public static final class ConfigException extends Exception {
        public ConfigException(String message) { super(message); }
    }

    /**
     * @param bind            address to listen on; loopback unless the operator says otherwise
     * @param publicUrl       how clients reach this server (scheme://host[:port]); the OAuth resource identifier
     * @param allowedOrigins  Origin values accepted (DNS-rebinding protection); {@code host:*} allows any port
     * @param allowedHosts    Host header values accepted; {@code host:*} allows any port
     * @param previews        how exposed ports are served (optional)
     */
    public record Http(String bind, Integer port, @JsonProperty("public_url") String publicUrl,
                       @JsonProperty("allowed_origins") List<String> allowedOrigins,
                       @JsonProperty("allowed_hosts") List<String> allowedHosts, Previews previews) {}

    /**
     * Exposed ports over HTTP (issue 13). They are served on the MCP server's own port, at
     * {@code <public_url>/p/<id>/}, or at {@code <scheme>://<id>.<domain>[:<port of public_url>]/} with a domain.
     *
     * @param domain     wildcard domain whose names all resolve to this server ({@code *.previews.example.com}): each
     *                   exposure gets its own host name, so apps that must live at {@code /} work, and previews of
     *                   different tenants are different browser origins
     * @param hostHeader the Host the app sees: {@code "localhost"} (default: {@code localhost:<port>}),
     *                   {@code "preserve"} (what the browser sent), or a literal {@code host[:port]}
     */
    public record Previews(String domain, @JsonProperty("host_header") String hostHeader) {}

    public record Auth(List<StaticToken> tokens, Jwt jwt) {}

    /** A bearer token for a tenant, stored as the hex SHA-256 of the token so the file holds no secret. */
    public record StaticToken(String tenant, String sha256) {}

    /**
     * JWT access tokens from an authorization server.
     *
     * @param audience    expected {@code aud}; defaults to this server's resource URL (RFC 8707 audience binding)
     * @param jwksFile    the issuer's public keys (a JWKS document)
     * @param tenantClaim the claim naming the tenant; {@code sub} by default
     */
    public record Jwt(String issuer, String audience, @JsonProperty("jwks_file") String jwksFile,
                      @JsonProperty("tenant_claim") String tenantClaim) {}

    /**
     * @param secrets names of the egress section's secret bindings this tenant's workspaces may ask for; absent or
     *                empty means none (the stdio user is the operator and may use every binding)
     */
    public record TenantConfig(Quota quota, List<String> secrets, LifecycleConfig lifecycle, WorkspaceSizes workspace,
                               List<String> images) {
        public TenantConfig(Quota quota, List<String> secrets, LifecycleConfig lifecycle, WorkspaceSizes workspace) {
            this(quota, secrets, lifecycle, workspace, null);
        }

        public TenantConfig(Quota quota) {
            this(quota, null, null, null);
        }

        public TenantConfig(Quota quota, List<String> secrets, LifecycleConfig lifecycle) {
            this(quota, secrets, lifecycle, null);
        }
    }

    /**
     * {@code tenants.<id>.workspace}: the resources one workspace gets when it asks for none ({@code default}) and the
     * most it may ask for ({@code max}); absent fields keep Berth's defaults (1 vCPU, 512 MiB, 4096 MiB disk, 1024
     * processes) and no ceiling beyond the machine.
     */
    public record WorkspaceSizes(@JsonProperty("default") Size defaults, Size max) {}

    public record Size(Integer vcpus, @JsonProperty("memory_mib") Integer memoryMiB, @JsonProperty("disk_mib") Integer diskMiB,
                       @JsonProperty("max_pids") Integer maxPids, @JsonProperty("io_read_bps") Long ioReadBps,
                       @JsonProperty("io_write_bps") Long ioWriteBps, @JsonProperty("io_read_iops") Long ioReadIops,
                       @JsonProperty("io_write_iops") Long ioWriteIops) {
        public Size(Integer vcpus, Integer memoryMiB, Integer diskMiB, Integer maxPids) {
            this(vcpus, memoryMiB, diskMiB, maxPids, null, null, null, null);
        }

        dev.berth.engine.spi.Resources over(dev.berth.engine.spi.Resources base) {
            var io = base.io();
            return new dev.berth.engine.spi.Resources(vcpus == null ? base.vcpus() : vcpus, memoryMiB == null ? base.memoryMiB() : memoryMiB,
                    diskMiB == null ? base.diskMiB() : diskMiB, maxPids == null ? base.maxPids() : maxPids,
                    new dev.berth.engine.spi.IoLimits(ioReadBps == null ? io.readBps() : ioReadBps, ioWriteBps == null ? io.writeBps() : ioWriteBps,
                            ioReadIops == null ? io.readIops() : ioReadIops, ioWriteIops == null ? io.writeIops() : ioWriteIops));
        }
    }

    /** Ceilings for one tenant; an absent field means no limit on that resource. */
    public record Quota(Integer workspaces, Integer vcpus, @JsonProperty("memory_mib") Integer memoryMiB,
                        @JsonProperty("disk_mib") Long diskMiB, Integer snapshots,
                        @JsonProperty("snapshot_mib") Long snapshotMiB) {}

    public static final String DEFAULT_BIND = "127.0.0.1";
    public static final int DEFAULT_PORT = 8080;
    /** Loopback names only: a browser page from anywhere else cannot drive the server through DNS rebinding. */
    public static final List<String> LOOPBACK_HOSTS = List.of("127.0.0.1:*", "localhost:*", "[::1]:*");
    public static final List<String> LOOPBACK_ORIGINS = List.of("http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*");

    private static final System.Logger LOG = System.getLogger("berth.config");
    private static final Pattern SHA256_HEX = Pattern.compile("[0-9a-f]{64}");
    private static final JsonMapper JSON = JsonMapper.builder()
            .enable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .build();

    public static OperatorConfig load(Path file) throws ConfigException {
        return load(file, null, null);
    }

    /** Loads a config; {@code bind} and {@code port} (command-line flags), when not null, win over the file's. */
    public static OperatorConfig load(Path file, String bind, Integer port) throws ConfigException {
        return load(file, bind, port, true);
    }

    /**
     * For {@code berth stdio}: one local user, no HTTP, so no authentication is needed; the egress and guard sections
     * are what it uses.
     */
    public static OperatorConfig loadForStdio(Path file) throws ConfigException {
        return load(file, null, null, false);
    }

    private static OperatorConfig load(Path file, String bind, Integer port, boolean requireAuth) throws ConfigException {
        return load(file, bind, port, requireAuth, w -> LOG.log(System.Logger.Level.WARNING, "config " + file + ": " + w));
    }

    /** As {@link #load(Path, String, Integer)}; each deprecated egress key spelling goes to {@code warnings}, once per load. */
    static OperatorConfig load(Path file, String bind, Integer port, boolean requireAuth, java.util.function.Consumer<String> warnings)
            throws ConfigException {
        String text;
        try {
            text = Files.readString(file);
        } catch (NoSuchFileException e) {
            throw new ConfigException("config file " + file + " does not exist");
        } catch (IOException e) {
            throw new ConfigException("cannot read config file " + file + ": " + e.getMessage());
        }
        OperatorConfig c;
        try {
            c = JSON.readValue(text, OperatorConfig.class);
        } catch (UnrecognizedPropertyException e) {
            List<String> known = e.getKnownPropertyIds() == null ? List.of() : e.getKnownPropertyIds().stream().map(String::valueOf).toList();
            String near = dev.berth.proxy.ConfigKeys.closest(e.getPropertyName(), known);
            throw new ConfigException("config " + file + ": unknown key '" + e.getPropertyName() + "' at " + where(e)
                    + (near == null ? "" : "; did you mean '" + near + "'?") + " (known keys there: " + e.getKnownPropertyIds() + ")");
        } catch (JacksonException e) {
            throw new ConfigException("config " + file + ": " + e.getOriginalMessage() + " at " + where(e));
        }
        if (c == null) throw new ConfigException("config " + file + " is empty");
        if (bind != null || port != null) {
            Http h = c.http() == null ? new Http(null, null, null, null, null, null) : c.http();
            c = new OperatorConfig(new Http(bind == null ? h.bind() : bind, port == null ? h.port() : port, h.publicUrl(),
                    h.allowedOrigins(), h.allowedHosts(), h.previews()), c.auth(), c.tenants(), c.egress(), c.guard(), c.lifecycle(), c.audit(),
                    c.metrics(), c.pool(), c.projectRoots(), c.fleet());
        }
        c = c.withDefaults(file.toAbsolutePath().getParent());
        c.validate(file, requireAuth, warnings);
        return c;
    }

    private static String where(JacksonException e) {
        StringBuilder sb = new StringBuilder("$");
        for (var ref : e.getPath()) {
            if (ref.getPropertyName() != null) sb.append('.').append(ref.getPropertyName());
            else if (ref.getIndex() >= 0) sb.append('[').append(ref.getIndex()).append(']');
        }
        return sb.toString();
    }

    /** Fills what the operator left out; {@code dir} resolves relative file names. */
    private OperatorConfig withDefaults(Path dir) {
        Http h = http == null ? new Http(null, null, null, null, null, null) : http;
        String bind = h.bind() == null ? DEFAULT_BIND : h.bind();
        int port = h.port() == null ? DEFAULT_PORT : h.port();
        String hostForUrl = bind.contains(":") ? "[" + bind + "]" : bind;
        String publicUrl = h.publicUrl() == null ? "http://" + hostForUrl + ":" + port : stripSlash(h.publicUrl());
        h = new Http(bind, port, publicUrl, h.allowedOrigins() == null ? LOOPBACK_ORIGINS : h.allowedOrigins(),
                h.allowedHosts() == null ? LOOPBACK_HOSTS : h.allowedHosts(), h.previews());
        Auth a = auth == null ? new Auth(List.of(), null) : new Auth(auth.tokens() == null ? List.of() : auth.tokens(), auth.jwt());
        if (a.jwt() != null) {
            Jwt j = a.jwt();
            String jwks = j.jwksFile() == null ? null : dir.resolve(j.jwksFile()).normalize().toString();
            a = new Auth(a.tokens(), new Jwt(j.issuer(), j.audience() == null ? publicUrl : j.audience(), jwks,
                    j.tenantClaim() == null ? "sub" : j.tenantClaim()));
        }
        return new OperatorConfig(h, a, tenants == null ? Map.of() : new LinkedHashMap<>(tenants), dev.berth.proxy.ConfigLoader.resolveFiles(egress, dir), guard, lifecycle,
                audit, metrics, pool, projectRoots == null ? null : projectRoots.stream().map(r -> dir.resolve(r).normalize().toString()).toList(),
                fleet == null ? null : fleet.resolved(dir, publicUrl));
    }

    /** The egress section as the proxy's own config (same format as an --egress file); null when absent. */
    public dev.berth.proxy.ProxyConfig egressConfig() throws dev.berth.proxy.ConfigException {
        return egress == null ? null : dev.berth.proxy.ConfigLoader.parseSection(egress.toString(), w -> { });
    }

    public dev.berth.engine.api.GuardMode guardMode() {
        return guard == null ? dev.berth.engine.api.GuardMode.REPORT : dev.berth.engine.api.GuardMode.parse(guard.mode());
    }

    private static String stripSlash(String s) { return s.endsWith("/") ? s.substring(0, s.length() - 1) : s; }

    private void validate(Path file, boolean requireAuth, java.util.function.Consumer<String> warnings) throws ConfigException {
        String at = "config " + file + ": ";
        if (guard != null) {
            try {
                dev.berth.engine.api.GuardMode.parse(String.valueOf(guard.mode()));
            } catch (IllegalArgumentException e) {
                throw new ConfigException(at + "guard.mode: " + e.getMessage());
            }
        }
        if (audit != null && !List.of("refuse", "continue").contains(String.valueOf(audit.onFailure()))) {
            throw new ConfigException(at + "audit.on_failure must be \"refuse\" or \"continue\", got \"" + audit.onFailure() + "\"");
        }
        if (metrics != null && (metrics.tokenSha256() == null || !SHA256_HEX.matcher(metrics.tokenSha256()).matches())) {
            throw new ConfigException(at + "metrics.token_sha256 must be 64 lowercase hex digits (sha256sum of the operator's"
                    + " scrape token), got \"" + metrics.tokenSha256() + "\"");
        }
        if (metrics != null && auth != null && auth.tokens().stream().anyMatch(t -> t != null && metrics.tokenSha256().equals(t.sha256()))) {
            throw new ConfigException(at + "metrics.token_sha256 is also a tenant's token; the scrape token must be the operator's own");
        }
        java.util.Set<String> bound = java.util.Set.of();
        if (egress != null) {
            try {
                // the one parse of this load that reports deprecated spellings; egressConfig() later stays quiet
                bound = dev.berth.proxy.ConfigLoader.parseSection(egress.toString(), warnings).secrets().keySet();
            } catch (dev.berth.proxy.ConfigException e) {
                throw new ConfigException(at + "egress: " + e.getMessage());
            }
        }
        for (var t : tenants.entrySet()) {
            List<String> names = t.getValue() == null || t.getValue().secrets() == null ? List.of() : t.getValue().secrets();
            for (String n : names) {
                if (!bound.contains(n)) {
                    throw new ConfigException(at + "tenants." + t.getKey() + ".secrets names '" + n + "', which egress.secrets"
                            + " does not define" + (bound.isEmpty() ? "" : " (defined: " + String.join(", ", bound) + ")"));
                }
            }
        }
        // not 0 (any free port): the public URL and the resource metadata must name the port clients reach
        if (http.port() < 1 || http.port() > 65535) throw new ConfigException(at + "http.port must be 1-65535, got " + http.port());
        if (http.bind().isBlank()) throw new ConfigException(at + "http.bind must be an address, got \"\"");
        URI u;
        try {
            u = URI.create(http.publicUrl());
        } catch (IllegalArgumentException e) {
            throw new ConfigException(at + "http.public_url is not a URL: \"" + http.publicUrl() + "\"");
        }
        if (!("http".equals(u.getScheme()) || "https".equals(u.getScheme())) || u.getHost() == null
                || (u.getPath() != null && !u.getPath().isEmpty())) {
            throw new ConfigException(at + "http.public_url must be http(s)://host[:port] with no path, got \"" + http.publicUrl() + "\"");
        }
        if (http.previews() != null) {
            String d = http.previews().domain();
            if (d != null && !d.matches("(?=.{1,200}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?")) {
                throw new ConfigException(at + "http.previews.domain must be a lower-case DNS name (previews are <id>.<domain>), got \"" + d + "\"");
            }
            String hh = http.previews().hostHeader();
            if (hh != null && !hh.matches("[A-Za-z0-9.:\\[\\]-]{1,255}")) {
                throw new ConfigException(at + "http.previews.host_header must be \"localhost\", \"preserve\" or a host[:port], got \"" + hh + "\"");
            }
        }
        checkLifecycle(at, "lifecycle", lifecycle);
        if (fleet != null) try { fleet.validate(); } catch (IllegalArgumentException e) { throw new ConfigException(at + e.getMessage()); }
        if (lifecycle != null && lifecycle.maxLiveWorkspaces() != null && lifecycle.maxLiveWorkspaces() < 1) {
            throw new ConfigException(at + "lifecycle.max_live_workspaces must be >= 1, got " + lifecycle.maxLiveWorkspaces());
        }
        if (pool != null && pool.size() != null && (pool.size() < 0 || pool.size() > 64)) {
            throw new ConfigException(at + "pool.size must be 0 (no pool) to 64, got " + pool.size());
        }
        if (pool != null && pool.memoryMib() != null && pool.memoryMib() < 0) {
            throw new ConfigException(at + "pool.memory_mib must be 0 (no pool) or more, got " + pool.memoryMib());
        }
        if (lifecycle != null && lifecycle.maxForksPerOpen() != null && lifecycle.maxForksPerOpen() < 1) {
            throw new ConfigException(at + "lifecycle.max_forks_per_open must be >= 1, got " + lifecycle.maxForksPerOpen());
        }
        for (var e : tenants.entrySet()) {
            LifecycleConfig tl = e.getValue() == null ? null : e.getValue().lifecycle();
            checkLifecycle(at, "tenants." + e.getKey() + ".lifecycle", tl);
            if (tl != null && tl.maxForksPerOpen() != null) {
                throw new ConfigException(at + "tenants." + e.getKey() + ".lifecycle.max_forks_per_open is server-wide; set it in lifecycle");
            }
            if (tl != null && tl.maxLiveWorkspaces() != null) {
                throw new ConfigException(at + "tenants." + e.getKey() + ".lifecycle.max_live_workspaces is server-wide; a tenant's"
                        + " own limit is tenants." + e.getKey() + ".quota.workspaces");
            }
        }
        for (var e : tenants.entrySet()) {
            try {
                tenant(e.getKey());
            } catch (IllegalArgumentException ex) {
                throw new ConfigException(at + "tenants: " + ex.getMessage());
            }
            Quota q = e.getValue() == null ? null : e.getValue().quota();
            if (q != null) {
                for (var f : Map.of("workspaces", opt(q.workspaces()), "vcpus", opt(q.vcpus()), "memory_mib", opt(q.memoryMiB()),
                        "disk_mib", q.diskMiB() == null ? 0L : q.diskMiB(), "snapshots", opt(q.snapshots()),
                        "snapshot_mib", q.snapshotMiB() == null ? 0L : q.snapshotMiB()).entrySet()) {
                    if (f.getValue() < 0) {
                        throw new ConfigException(at + "tenants." + e.getKey() + ".quota." + f.getKey() + " must be >= 0, got " + f.getValue());
                    }
                }
            }
        }
        Set<String> hashes = new HashSet<>();
        for (int i = 0; i < auth.tokens().size(); i++) {
            StaticToken t = auth.tokens().get(i);
            String p = "auth.tokens[" + i + "]";
            if (t == null || t.tenant() == null) throw new ConfigException(at + p + ".tenant is required");
            if (!tenants.containsKey(t.tenant())) {
                throw new ConfigException(at + p + ".tenant '" + t.tenant() + "' is not declared under tenants (declared: " + tenants.keySet() + ")");
            }
            if (t.sha256() == null || !SHA256_HEX.matcher(t.sha256()).matches()) {
                throw new ConfigException(at + p + ".sha256 must be 64 lowercase hex digits (sha256sum of the token), got \""
                        + t.sha256() + "\"");
            }
            if (!hashes.add(t.sha256())) throw new ConfigException(at + p + ".sha256 repeats an earlier token's hash");
        }
        Jwt j = auth.jwt();
        if (j != null) {
            if (j.issuer() == null || j.issuer().isBlank()) throw new ConfigException(at + "auth.jwt.issuer is required");
            if (j.jwksFile() == null) throw new ConfigException(at + "auth.jwt.jwks_file is required (the issuer's public keys, JWKS)");
            if (!Files.isReadable(Path.of(j.jwksFile()))) {
                throw new ConfigException(at + "auth.jwt.jwks_file " + j.jwksFile() + " cannot be read");
            }
        }
        if (requireAuth && auth.tokens().isEmpty() && j == null) {
            throw new ConfigException(at + "auth has neither tokens nor jwt; berth http never serves without authentication");
        }
    }

    private static long opt(Integer v) { return v == null ? 0 : v; }

    private static void checkLifecycle(String at, String where, LifecycleConfig l) throws ConfigException {
        if (l == null) return;
        for (var f : new java.util.TreeMap<>(Map.of("idle_park_s", l.idleParkSeconds() == null ? 0L : l.idleParkSeconds(),
                "idle_close_s", l.idleCloseSeconds() == null ? 0L : l.idleCloseSeconds(),
                "ttl_s", l.ttlSeconds() == null ? 0L : l.ttlSeconds())).entrySet()) {
            if (f.getValue() < 0) {
                throw new ConfigException(at + where + "." + f.getKey() + " must be >= 0 seconds (0 = never), got " + f.getValue());
            }
        }
    }

    /** The engine's view of a configured tenant, with its quota; unknown ids are refused. */
    public Tenant tenant(String id) {
        if (!tenants.containsKey(id)) throw new IllegalArgumentException("tenant '" + id + "' is not configured");
        TenantConfig tc = tenants.get(id);
        Quota q = tc == null ? null : tc.quota();
        java.util.Set<String> secrets = tc == null || tc.secrets() == null ? java.util.Set.of() : java.util.Set.copyOf(tc.secrets());
        // imported images this tenant may open: none unless granted ("*" grants all)
        java.util.Set<String> images = tc == null || tc.images() == null ? java.util.Set.of() : java.util.Set.copyOf(tc.images());
        Tenant.Sizes sizes = Tenant.Sizes.STANDARD;
        if (tc != null && tc.workspace() != null) {
            var w = tc.workspace();
            var r = dev.berth.engine.spi.Resources.DEFAULT;
            var big = new dev.berth.engine.spi.Resources(Integer.MAX_VALUE, Integer.MAX_VALUE, Integer.MAX_VALUE, Integer.MAX_VALUE);
            var max = w.max() == null ? null : w.max().over(big);
            var dflt = w.defaults() == null ? r : w.defaults().over(r);
            // an I/O ceiling with no default for that direction: the default is the ceiling
            if (max != null) dflt = dflt.withIo(dflt.io().orElse(max.io()));
            sizes = new Tenant.Sizes(dflt, max);
        }
        if (q == null) return new Tenant(id, Tenant.Quota.UNLIMITED, secrets, sizes, images);
        Tenant.Quota u = Tenant.Quota.UNLIMITED;
        return new Tenant(id, new Tenant.Quota(q.workspaces() == null ? u.workspaces() : q.workspaces(),
                q.vcpus() == null ? u.vcpus() : q.vcpus(), q.memoryMiB() == null ? u.memoryMiB() : q.memoryMiB(),
                q.diskMiB() == null ? u.diskMiB() : q.diskMiB(), q.snapshots() == null ? u.snapshots() : q.snapshots(),
                q.snapshotMiB() == null ? u.snapshotMiB() : q.snapshotMiB()), secrets, sizes, images);
    }
}
