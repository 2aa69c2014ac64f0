package dev.berth.proxy;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.Expiry;
import com.github.benmanes.caffeine.cache.RemovalCause;
import com.github.benmanes.caffeine.cache.Scheduler;
import dev.berth.proxy.audit.AuditRecord;
import dev.berth.proxy.audit.AuditSink;
import dev.berth.proxy.net.AddressClassifier;
import dev.berth.proxy.net.HostNames;
import dev.berth.proxy.policy.ApprovalSettings;
import dev.berth.proxy.policy.Policy;
import dev.berth.proxy.session.ApprovalGate;
import dev.berth.proxy.session.Session;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

/**
 * Time-boxed, workspace-scoped egress grants that a human approved (see {@link ApprovalSettings}), held in a Caffeine
 * cache whose per-entry expiry is each grant's own lifetime. The proxy consults it when the policy refuses a
 * (host, port): a live grant for the connection's workspace allows it, and the decision's reason names the grant.
 * Asking the human is not done here (the proxy knows nothing of MCP): the caller checks {@link #check}, records
 * {@link #requested}, asks, and then calls {@link #grant} or {@link #notGranted}. Every step is an audit record
 * ({@code approval-requested}, {@code approval-granted}, {@code approval-declined}, {@code approval-expired},
 * {@code approval-ended}) in the workspace's audit log.
 *
 * <p>When a grant expires or ends (its workspace closed: {@link EgressProxy#forgetWorkspace}), the connections opened
 * under it are closed, so a tunnel opened a minute before expiry does not outlive it. Thread-safe.
 */
public final class Approvals {
    /** A live grant: {@code workspaceId} may reach {@code host:port} until {@code expiresAt}. */
    public record Grant(String id, String workspaceId, String host, int port, Instant grantedAt, Instant expiresAt,
                        String reason) {}

    /**
     * Whether a human may be asked to open {@code host:port}; {@code host} is the canonical name (or the printable
     * input when it is not a valid host), {@code reason} says why not when it is not approvable.
     */
    public record Check(boolean approvable, String host, int port, String reason) {}

    private record Key(String workspaceId, String host, int port) {}

    private static final SecureRandom RANDOM = new SecureRandom();

    private final ApprovalSettings settings;
    private final AuditSink audit;
    private final boolean loopbackOk;
    private final Cache<Key, Grant> grants;
    /** Connections opened under a grant (by its key), closed when it expires or ends. */
    private final ConcurrentMap<Key, Set<Session>> sessions = new ConcurrentHashMap<>();

    Approvals(ApprovalSettings settings, AuditSink audit, boolean loopbackOk) {
        this.settings = settings;
        this.audit = audit;
        this.loopbackOk = loopbackOk;
        this.grants = Caffeine.newBuilder()
                .expireAfter(Expiry.<Key, Grant>writing((k, g) -> Duration.between(Instant.now(), g.expiresAt())))
                // the scheduler ends a grant on time (audit record, connections closed) even if nobody asks for it
                .scheduler(Scheduler.systemScheduler())
                .removalListener((Key k, Grant g, RemovalCause cause) -> {
                    if (cause == RemovalCause.EXPIRED && g != null) ended(k, g, "approval-expired",
                            "approval grant " + g.id() + " for " + g.host() + ":" + g.port() + " expired at " + g.expiresAt());
                })
                .build();
    }

    public ApprovalSettings settings() { return settings; }

    /** Is {@code host:port} one the operator lets a human open? Never throws on bad input: the reason says what is wrong. */
    public Check check(String rawHost, int port) {
        if (rawHost == null || rawHost.isBlank()) return new Check(false, "", port, "host is required");
        HostNames.Host host;
        try {
            host = HostNames.normalize(rawHost);
        } catch (HostNames.InvalidHostException e) {
            return new Check(false, HostNames.printable(rawHost), port, "invalid host '" + HostNames.printable(rawHost) + "': " + e.getMessage());
        }
        String h = host.canonical();
        if (port < 1 || port > 65535) return new Check(false, h, port, "port " + port + " out of range 1-65535");
        if (!settings.enabled()) {
            return new Check(false, h, port, "approval is off: the operator marks no host approvable (egress.approval.hosts)");
        }
        if (host.isLiteral()) {
            AddressClassifier.Result r = AddressClassifier.classify(host.literal());
            if (!r.isPublic() && !(r.kind() == AddressClassifier.Kind.LOOPBACK && loopbackOk)) {
                return new Check(false, h, port, "IP literal '" + h + "' can never be approved: " + r.description() + " (a hard rule)");
            }
        }
        Policy.Verdict v = settings.hosts().check(host, port);
        if (!v.allowed()) {
            return new Check(false, h, port, h + ":" + port + " is not approvable: the operator's approval list (egress.approval.hosts "
                    + settings.hosts().describe() + ") does not name it");
        }
        return new Check(true, h, port, h + ":" + port + " is approvable (" + v.reason().replace(" allowed by entry", " named by approval entry") + ")");
    }

    /** The live grant of {@code workspaceId} for a canonical {@code host:port}, or null. */
    public Grant active(String workspaceId, String host, int port) {
        Grant g = grants.getIfPresent(new Key(workspaceId, host, port));
        return g == null || !g.expiresAt().isAfter(Instant.now()) ? null : g;
    }

    /** Live grants of a workspace, soonest expiry first. */
    public List<Grant> active(String workspaceId) {
        Instant now = Instant.now();
        return grants.asMap().values().stream().filter(g -> g.workspaceId().equals(workspaceId) && g.expiresAt().isAfter(now))
                .sorted(java.util.Comparator.comparing(Grant::expiresAt)).toList();
    }

    /** Audit: someone asked a human to open {@code host:port} for the workspace. */
    public void requested(String workspaceId, String runId, Check c, String why) {
        audit.record(record("approval-requested", workspaceId, runId, c.host(), c.port(), "requested", why));
    }

    /** Audit: the human declined or cancelled, did not answer in time, or answered something unusable; nothing granted. */
    public void notGranted(String workspaceId, String runId, Check c, String outcome) {
        audit.record(record("approval-declined", workspaceId, runId, c.host(), c.port(), "denied", outcome + "; nothing granted"));
    }

    /**
     * Grants {@code workspaceId} the approvable {@code c} for {@code ttl} (one of the offered durations). A second
     * grant for the same host and port replaces the first (the new lifetime counts).
     *
     * @throws IllegalArgumentException when {@code c} is not approvable or {@code ttl} is not an offered duration
     */
    public Grant grant(String workspaceId, String runId, Check c, Duration ttl, String how) {
        if (!c.approvable()) throw new IllegalArgumentException(c.reason());
        if (!settings.durations().contains(ttl)) {
            throw new IllegalArgumentException("duration " + ttl.toSeconds() + " s is not one the operator offers ("
                    + settings.durations().stream().map(ApprovalSettings::label).toList() + ")");
        }
        Instant now = Instant.now();
        Grant g = new Grant("approval-" + HexFormat.of().formatHex(bytes()),
                workspaceId, c.host(), c.port(), now, now.plus(ttl), how);
        grants.put(new Key(workspaceId, c.host(), c.port()), g);
        audit.record(record("approval-granted", workspaceId, runId, c.host(), c.port(), "allowed",
                "approval grant " + g.id() + " for " + ApprovalSettings.label(ttl) + " until " + g.expiresAt() + ": " + how));
        return g;
    }

    private static byte[] bytes() {
        byte[] b = new byte[8];
        RANDOM.nextBytes(b);
        return b;
    }

    /** The view the decision pipeline consults when the policy refuses a target. */
    ApprovalGate gate() {
        return new ApprovalGate() {
            @Override
            public String allowedBy(Session session, String host, int port) {
                Grant g = active(session.context().workspaceId(), host, port);
                if (g == null) return null;
                opened(g, session);
                return "host '" + host + "' port " + port + " allowed by approval grant " + g.id()
                        + " (a human approved it for workspace " + g.workspaceId() + " until " + g.expiresAt() + ")";
            }

            @Override
            public boolean approvable(String host, int port) {
                return settings.enabled() && check(host, port).approvable();
            }
        };
    }

    /** The workspace closed: its grants end now (audited), and connections opened under them are closed. */
    void endWorkspace(String workspaceId, String why) {
        for (Key k : List.copyOf(grants.asMap().keySet())) {
            if (!k.workspaceId().equals(workspaceId)) continue;
            Grant g = grants.asMap().remove(k);
            if (g != null) ended(k, g, "approval-ended", "approval grant " + g.id() + " for " + g.host() + ":" + g.port() + " ended: " + why);
        }
    }

    /** A connection was allowed by {@code g}: it is closed when the grant expires or ends. */
    void opened(Grant g, Session s) {
        Key k = new Key(g.workspaceId(), g.host(), g.port());
        sessions.computeIfAbsent(k, x -> ConcurrentHashMap.newKeySet()).add(s);
        if (s.client() != null) s.client().closeFuture().addListener(f -> sessions.computeIfPresent(k, (x, set) -> {
            set.remove(s);
            return set.isEmpty() ? null : set;
        }));
        if (grants.getIfPresent(k) == null) s.revoke("approval grant " + g.id() + " ended");  // lost a race with expiry
    }

    private void ended(Key k, Grant g, String event, String reason) {
        audit.record(record(event, g.workspaceId(), null, g.host(), g.port(), "ended", reason));
        Set<Session> open = sessions.remove(k);
        if (open != null) for (Session s : open) s.revoke(reason);
    }

    private static AuditRecord record(String event, String ws, String run, String host, int port, String decision, String reason) {
        return new AuditRecord(event, Instant.now(), ws, run, null, "approval", null, host, port, null, decision, reason, 0, 0, 0, null);
    }
}
