package dev.berth.engine;

import dev.berth.engine.api.EngineException;
import dev.berth.engine.api.PortExposure;
import dev.berth.engine.api.Tenant;
import dev.berth.engine.api.WorkspaceState;

import com.fasterxml.jackson.annotation.JsonProperty;
import dev.berth.engine.api.EngineException.Kind;
import dev.berth.engine.agent.AgentException;
import dev.berth.engine.agent.PortStream;
import dev.berth.engine.evidence.EngineEvidence;
import dev.berth.engine.lifecycle.WorkspaceLifecycle;
import dev.berth.engine.spi.MetaFile;
import dev.berth.engine.spi.Sandbox;
import dev.berth.engine.workspace.Workspace;
import dev.berth.engine.workspace.WorkspaceAction;
import dev.berth.engine.workspace.WorkspaceRegistry;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Instant;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.json.JsonMapper;

/**
 * Exposed ports of workspaces (issue 13): which ports are exposed, to whom and until when, and inbound connections
 * to them over the guest agent (agent protocol PORT_OPEN), usable without MCP. A connection to a parked workspace
 * resumes it (wake on traffic); an open connection counts as activity for the idle policy. What is exposed is kept
 * in {@code <workspace dir>/ports.meta} (MetaFile kind "ports", version 1), so exposures (and their URLs) survive a
 * resume and a server restart, and go with the workspace's directory when it closes. Thread-safe.
 */
public final class Ports {
    private static final System.Logger LOG = System.getLogger("berth.engine");
    static final int FORMAT_VERSION = 1;
    static final String FILE = "ports.meta";
    /** Default and longest lifetime of a link (capability URL); tenant exposures live until unexposed unless given a ttl. */
    public static final long LINK_DEFAULT_TTL_S = 3600, MAX_TTL_S = 7 * 24 * 3600;
    public static final int MAX_PER_WORKSPACE = 16;
    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final SecureRandom RANDOM = new SecureRandom();

    private final WorkspaceRegistry registry;
    private final WorkspaceLifecycle lifecycle;
    private final EngineEvidence evidence;
    /** The engine's clock: exposures expire on it. */
    private final java.time.InstantSource clock;
    private final Map<String, PortExposure> byId = new ConcurrentHashMap<>();
    private volatile Function<String, Tenant> tenants = id -> Tenant.LOCAL.id().equals(id) ? Tenant.LOCAL : null;

    /** The persisted form: versioned by the MetaFile header. */
    record Saved(@JsonProperty("exposures") List<PortExposure> exposures) {}

    Ports(WorkspaceRegistry registry, WorkspaceLifecycle lifecycle, EngineEvidence evidence, java.time.InstantSource clock) {
        this.clock = clock;
        this.registry = registry;
        this.lifecycle = lifecycle;
        this.evidence = evidence;
    }

    /**
     * How to find the {@link Tenant} (its quota) of a workspace owner when a preview request wakes a parked workspace
     * and no tenant presented itself (link access). Without one only the local stdio tenant is known.
     */
    public void setTenantResolver(Function<String, Tenant> resolver) { this.tenants = resolver; }

    /** Loads what every recovered workspace had exposed (engine start). */
    void load() {
        for (Workspace ws : registry.all()) {
            Path f = ws.dir.resolve(FILE);
            if (!Files.exists(f)) continue;
            try {
                Saved s = JSON.readValue(MetaFile.read(f, "ports", FORMAT_VERSION), Saved.class);
                for (PortExposure e : s.exposures()) {
                    if (e.workspace().equals(ws.id) && e.tenant().equals(ws.tenant)) byId.put(e.id(), e);
                }
            } catch (IOException | JacksonException e) {
                LOG.log(System.Logger.Level.WARNING, "exposed ports of " + ws.id + " not restored: " + e.getMessage());
            }
        }
    }

    private void save(Workspace ws) throws EngineException {
        List<PortExposure> mine = byId.values().stream().filter(e -> e.workspace().equals(ws.id))
                .sorted(Comparator.comparing(PortExposure::createdAt)).toList();
        try {
            MetaFile.write(ws.dir.resolve(FILE), "ports", FORMAT_VERSION, JSON.writeValueAsString(new Saved(mine)));
        } catch (IOException | JacksonException e) {
            throw new EngineException(Kind.UNAVAILABLE, "could not record the exposed ports of '" + ws.label() + "': " + e.getMessage(), e);
        }
    }

    /**
     * Exposes {@code port} of the workspace. Exposing a port again replaces its earlier exposure (new id, access and
     * expiry), so a leaked link can be revoked by exposing again or unexposing.
     *
     * @param access "tenant" (default) or "link"
     * @param ttlSeconds null: tenant exposures never expire, links expire after {@link #LINK_DEFAULT_TTL_S}
     */
    public PortExposure expose(Tenant tenant, String ref, int port, String access, Long ttlSeconds) throws EngineException {
        if (port < 1 || port > 65535) throw new EngineException(Kind.INVALID_ARGUMENT, "port must be 1..65535, got " + port);
        String acc = access == null ? PortExposure.TENANT : access;
        if (!acc.equals(PortExposure.TENANT) && !acc.equals(PortExposure.LINK)) {
            throw new EngineException(Kind.INVALID_ARGUMENT, "access must be \"tenant\" (the tenant's token is required) or \"link\""
                    + " (the URL is the credential), got \"" + access + "\"");
        }
        if (ttlSeconds != null && (ttlSeconds < 1 || ttlSeconds > MAX_TTL_S)) {
            throw new EngineException(Kind.INVALID_ARGUMENT, "ttl_s must be 1.." + MAX_TTL_S + " (7 days), got " + ttlSeconds);
        }
        Workspace ws = registry.resolve(tenant, ref);
        ws.lock.lock();
        try {
            if (ws.state() == WorkspaceState.CLOSED || ws.state() == WorkspaceState.DAMAGED) {
                throw new EngineException(Kind.ILLEGAL_STATE, "cannot expose a port of workspace '" + ws.label() + "': it is "
                        + ws.state().name().toLowerCase(java.util.Locale.ROOT));
            }
            Instant now = clock.instant();
            Long ttl = ttlSeconds != null ? ttlSeconds : acc.equals(PortExposure.LINK) ? Long.valueOf(LINK_DEFAULT_TTL_S) : null;
            List<PortExposure> before = live(ws, now);
            PortExposure old = before.stream().filter(e -> e.port() == port).findFirst().orElse(null);
            if (old == null && before.size() >= MAX_PER_WORKSPACE) {
                throw new EngineException(Kind.LIMIT, "workspace '" + ws.label() + "' has " + before.size()
                        + " exposed ports already (limit " + MAX_PER_WORKSPACE + "); close one with expose_port close: true");
            }
            PortExposure e = new PortExposure(newId(), ws.id, ws.tenant, port, acc, now, ttl == null ? null : now.plusSeconds(ttl));
            List<PortExposure> replaced = byId.values().stream().filter(x -> x.workspace().equals(ws.id) && x.port() == port).toList();
            replaced.forEach(x -> byId.remove(x.id())); // expired ones of this port too: one exposure per port
            byId.put(e.id(), e);
            try {
                save(ws);
            } catch (EngineException x) {
                byId.remove(e.id());
                replaced.forEach(r -> byId.put(r.id(), r));
                throw x;
            }
            Map<String, Object> m = fields(e);
            m.put("event", "expose");
            if (old != null) m.put("replaces", old.id());
            record(ws.tenant, m, true);
            return e;
        } finally {
            ws.lock.unlock();
        }
    }

    /** Unexposes {@code port}; NOT_FOUND when it was not exposed. Open connections to it are not cut. */
    public PortExposure unexpose(Tenant tenant, String ref, int port) throws EngineException {
        Workspace ws = registry.resolve(tenant, ref);
        ws.lock.lock();
        try {
            List<PortExposure> all = byId.values().stream().filter(x -> x.workspace().equals(ws.id) && x.port() == port).toList();
            PortExposure e = all.stream().filter(x -> !x.expired(clock.instant())).findFirst()
                    .orElseThrow(() -> new EngineException(Kind.NOT_FOUND, "port " + port + " of workspace '" + ws.label()
                            + "' is not exposed" + (all.isEmpty() ? "" : " (its last exposure has expired)")));
            all.forEach(x -> byId.remove(x.id()));
            try {
                save(ws);
            } catch (EngineException x) {
                all.forEach(r -> byId.put(r.id(), r));
                throw x;
            }
            Map<String, Object> m = fields(e);
            m.put("event", "unexpose");
            record(ws.tenant, m, true);
            return e;
        } finally {
            ws.lock.unlock();
        }
    }

    /** The live (not expired) exposures of a workspace, oldest first. */
    public List<PortExposure> list(Tenant tenant, String ref) throws EngineException {
        return live(registry.resolve(tenant, ref), clock.instant());
    }

    private List<PortExposure> live(Workspace ws, Instant now) {
        return byId.values().stream().filter(e -> e.workspace().equals(ws.id) && !e.expired(now))
                .sorted(Comparator.comparing(PortExposure::createdAt)).toList();
    }

    /**
     * The exposure behind a preview URL, if it exists, has not expired and its workspace is still open. Callers
     * decide access themselves (tenant token or link) and record the decision with {@link #recordAccess}.
     */
    public Optional<PortExposure> find(String id) {
        PortExposure e = id == null ? null : byId.get(id);
        if (e == null) return Optional.empty();
        Workspace ws = workspace(e);
        if (ws == null) {
            byId.remove(id, e); // the workspace closed: its ports.meta went with its directory
            return Optional.empty();
        }
        return Optional.of(e);
    }

    private Workspace workspace(PortExposure e) {
        for (Workspace ws : registry.all()) {
            if (ws.id.equals(e.workspace()) && ws.state() != WorkspaceState.CLOSED) return ws;
        }
        return null;
    }

    /** One inbound connection: the stream, and {@link #close()} to stop counting it as activity. */
    public static final class Connection implements AutoCloseable {
        private final PortStream stream;
        private final Workspace ws;
        private final boolean resumed;
        private final AtomicBoolean open = new AtomicBoolean(true);

        Connection(PortStream stream, Workspace ws, boolean resumed) {
            this.stream = stream;
            this.ws = ws;
            this.resumed = resumed;
        }

        public PortStream stream() { return stream; }

        /** Whether this connection woke the workspace from parked. */
        public boolean resumed() { return resumed; }

        /** The connection ended (both directions, or reset): it no longer keeps the workspace awake. */
        @Override
        public void close() {
            if (open.getAndSet(false)) {
                ws.previewClosed();
                ws.touch();
            }
        }
    }

    /**
     * Opens a connection to the exposed port, resuming the workspace first when it is parked. Fails NOT_FOUND when the
     * exposure is gone or expired, UNAVAILABLE (message says so) when nothing listens on the port inside.
     */
    public Connection connect(PortExposure e, PortStream.Sink sink) throws EngineException {
        if (e.expired(clock.instant())) throw new EngineException(Kind.NOT_FOUND, "the preview link has expired");
        Workspace ws = workspace(e);
        if (ws == null) throw new EngineException(Kind.NOT_FOUND, "the workspace of this preview is closed");
        Sandbox sandbox;
        boolean resumed;
        ws.lock.lock();
        try {
            ws.admit(WorkspaceAction.FILES);
            Tenant owner = tenants.apply(ws.tenant);
            if (owner == null && ws.state() != WorkspaceState.RUNNING) {
                throw new EngineException(Kind.UNAVAILABLE, "workspace '" + ws.label() + "' is parked and its tenant is unknown to"
                        + " this server, so it cannot be resumed for the preview");
            }
            resumed = lifecycle.ensureRunning(owner, ws);
            sandbox = ws.sandbox();
            ws.previewOpened();
            ws.touch();
        } finally {
            ws.lock.unlock();
        }
        try {
            PortStream s = sandbox.agent().openPort(e.port(), sink);
            return new Connection(s, ws, resumed);
        } catch (AgentException x) {
            ws.previewClosed();
            if (x.errno() == 111) {
                throw new EngineException(Kind.UNAVAILABLE, "nothing listens on port " + e.port() + " inside workspace '"
                        + ws.label() + "' (connection refused on 127.0.0.1 and ::1); start the server so it listens on 127.0.0.1:" + e.port()
                        + ", localhost:" + e.port() + " or 0.0.0.0:" + e.port(), x);
            }
            throw new EngineException(Kind.UNAVAILABLE, "could not connect to port " + e.port() + " inside workspace '"
                    + ws.label() + "': " + x.getMessage(), x);
        } catch (IOException x) {
            ws.previewClosed();
            throw new EngineException(Kind.UNAVAILABLE, "could not reach the agent of workspace '" + ws.label() + "': " + x.getMessage(), x);
        } catch (RuntimeException x) {
            ws.previewClosed();
            throw x;
        }
    }

    /**
     * Records one access decision on a preview URL in the audit trail (queued, never blocks): allowed or refused, and
     * why. {@code e} null: the id matched no exposure (recorded in the server log).
     */
    public void recordAccess(PortExposure e, String id, boolean allowed, String reason, String method, String path, String remote) {
        Map<String, Object> m = new LinkedHashMap<>();
        if (e != null) m.putAll(fields(e));
        else m.put("preview", shortId(id));
        m.put("event", "access");
        m.put("allowed", allowed);
        m.put("reason", reason);
        if (method != null) m.put("method", method);
        if (path != null) m.put("path", path.length() > 200 ? path.substring(0, 200) : path);
        if (remote != null) m.put("remote", remote);
        evidence.trail().recordLater(e == null ? null : e.tenant(), "preview", m);
    }

    private Map<String, Object> fields(PortExposure e) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("preview", shortId(e.id())); // never the whole id: for links it is the credential
        m.put("workspace", e.workspace());
        m.put("port", e.port());
        m.put("access", e.access());
        if (e.expiresAt() != null) m.put("expires_at", e.expiresAt().toString());
        return m;
    }

    /** The first 8 characters of an id: enough to tell exposures apart in the audit trail, useless as a capability. */
    static String shortId(String id) {
        if (id == null) return "";
        String s = id.length() > 8 ? id.substring(0, 8) : id;
        return s.replaceAll("[^a-z2-7]", "?");
    }

    private void record(String tenant, Map<String, Object> m, boolean durable) throws EngineException {
        try {
            evidence.trail().record(tenant, "preview", m, durable ? dev.berth.engine.audit.Durability.DURABLE : dev.berth.engine.audit.Durability.QUEUED);
        } catch (dev.berth.engine.audit.AuditException x) {
            throw new EngineException(Kind.UNAVAILABLE, "the audit log cannot be written, so the port is not exposed unrecorded: " + x.getMessage(), x);
        }
    }

    /** 160 random bits, base32 lowercase (32 characters): the URL path segment, and for links the capability. */
    static String newId() {
        byte[] b = new byte[20];
        RANDOM.nextBytes(b);
        StringBuilder sb = new StringBuilder(32);
        String alphabet = "abcdefghijklmnopqrstuvwxyz234567";
        int buffer = 0, bits = 0;
        for (byte x : b) {
            buffer = (buffer << 8) | (x & 0xff);
            bits += 8;
            while (bits >= 5) {
                sb.append(alphabet.charAt((buffer >> (bits - 5)) & 31));
                bits -= 5;
            }
        }
        return sb.toString();
    }
}
