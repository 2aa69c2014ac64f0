package dev.berth.engine.egress;

import dev.berth.engine.api.EgressDenial;
import dev.berth.engine.api.EgressFiltered;
import dev.berth.engine.api.EgressSettings;
import dev.berth.engine.agent.Tunnel;
import dev.berth.engine.agent.TunnelHandler;
import dev.berth.proxy.ClientSink;
import dev.berth.proxy.Decision;
import dev.berth.proxy.EgressContext;
import dev.berth.proxy.EgressProxy;
import dev.berth.proxy.policy.Policy;
import dev.berth.proxy.ProxyConnection;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * Connects a workspace's egress tunnels (what a process inside sent to the agent's proxy port) to the egress proxy,
 * each under the run that opened it, so each run result lists what it was refused (and its receipt what it was
 * allowed) and a run's placeholders work only on its own connections.
 *
 * <p>The agent attributes every tunnel to the EXEC whose process tree opened it (agent protocol: TUNNEL_OPEN
 * {@code exec}); the runner maps that channel to its run ({@link #bind}) when the agent reports the process started.
 * An attributed connection gets the workspace policy narrowed by its own run's {@code egress} (background runs
 * included), the run's id (the proxy honours only that run's placeholders on it) and its denials. A connection the
 * agent could not attribute (a daemon that left its run's session and parent chain) gets the workspace policy
 * narrowed by every active run, no run id (so no placeholder is honoured on it), and its denials go to every active
 * run, since it could be any of them. Thread-safe.
 */
public final class WorkspaceEgress implements TunnelHandler {
    private final EgressProxy proxy;  // null: no egress configured
    private final String workspaceId;
    private final Policy policy;
    private final java.util.Set<String> secrets;
    /** The tenant that owns the workspace (null: none): the proxy's tenant quotas outlive the workspace. */
    private final String tenantId;
    private final List<RunEgress> active = new CopyOnWriteArrayList<>();
    /** EXEC channel of the current agent session -> its run, while the run is active. */
    private final Map<Integer, RunEgress> byExec = new java.util.concurrent.ConcurrentHashMap<>();
    /** Egress connections open right now: an open connection counts as activity for the idle policy. */
    private final java.util.concurrent.atomic.AtomicInteger open = new java.util.concurrent.atomic.AtomicInteger();

    public int openConnections() { return open.get(); }

    public WorkspaceEgress(EgressSettings settings, String workspaceId, Policy policy) {
        this(settings, workspaceId, policy, List.of());
    }

    /** @param secrets the workspace's secret bindings: the proxy intercepts TLS to their hosts (and only theirs) */
    public WorkspaceEgress(EgressSettings settings, String workspaceId, Policy policy, List<String> secrets) {
        this(settings, workspaceId, policy, secrets, null);
    }

    /** @param tenantId the owning tenant: its egress quotas (connection rate, bytes) span its workspaces and outlive them */
    public WorkspaceEgress(EgressSettings settings, String workspaceId, Policy policy, List<String> secrets, String tenantId) {
        this.tenantId = tenantId;
        this.proxy = settings == null ? null : settings.proxy();
        this.workspaceId = workspaceId;
        this.policy = policy;
        this.secrets = java.util.Set.copyOf(secrets);
    }

    /**
     * Mints this run's placeholders for {@code names} (the proxy keeps the real values); null when there is nothing
     * to mint. The caller revokes them with {@code close()} when the run returns.
     */
    public dev.berth.proxy.CredentialGrant mint(String runId, List<String> names) {
        if (proxy == null || names.isEmpty()) return null;
        return proxy.mint(workspaceId, runId, names);
    }

    public Policy policy() { return policy; }

    /** One run's view: its narrowing (or null) and the denials seen while it ran. */
    public static final class RunEgress {
        final String runId;
        final Policy narrowing;
        volatile int execChannel;
        private final Map<String, EgressDenial> denied = new LinkedHashMap<>();
        private final Map<String, Long> allowed = new java.util.TreeMap<>();

        RunEgress(String runId, Policy narrowing) {
            this.runId = runId;
            this.narrowing = narrowing;
        }

        synchronized void add(String host, int port, String reason) {
            denied.merge(host + ":" + port + ":" + reason, new EgressDenial(host, port, reason, 1),
                    (a, b) -> new EgressDenial(a.host(), a.port(), a.reason(), a.count() + 1));
        }

        public synchronized List<EgressDenial> denials() { return new ArrayList<>(denied.values()); }

        private final Map<String, EgressFiltered> filtered = new LinkedHashMap<>();

        synchronized void filtered(String host, int port, String reason) {
            filtered.merge(host + ":" + port + ":" + reason, new EgressFiltered(host, port, reason, 1),
                    (a, b) -> new EgressFiltered(a.host(), a.port(), a.reason(), a.count() + 1));
        }

        /** Registry metadata filtered for this run (versions hidden), by host, port and reason. */
        public synchronized List<EgressFiltered> filteredMetadata() { return new ArrayList<>(filtered.values()); }

        /** One decision of this run's connections: a denial, a filtered metadata response, or an allowed exchange. */
        void record(Decision d) {
            if ("filter".equals(d.kind())) filtered(d.host(), d.port(), d.reason());
            else if (d.allowed()) allow(d.host(), d.port());
            else add(d.host(), d.port(), d.reason());
        }

        synchronized void allow(String host, int port) { allowed.merge(host + ":" + port, 1L, Long::sum); }

        /** Allowed decisions (connections and requests) while the run was active, by host:port. */
        public synchronized Map<String, Long> allowedHosts() { return new java.util.TreeMap<>(allowed); }
    }

    public RunEgress begin(String runId, Policy narrowing) {
        RunEgress r = new RunEgress(runId, narrowing);
        active.add(r);
        return r;
    }

    public void end(RunEgress r) {
        active.remove(r);
        if (r.execChannel != 0) byExec.remove(r.execChannel, r);
    }

    /** The run's process started on EXEC channel {@code channel}: tunnels its tree opens belong to {@code r}. */
    public void bind(RunEgress r, int channel) {
        if (r == null || !active.contains(r)) return;
        if (r.execChannel != 0) byExec.remove(r.execChannel, r); // re-attached on a new connection: the old channel is void
        r.execChannel = channel;
        byExec.put(channel, r);
    }

    /** The workspace policy narrowed by every active run's narrowing. */
    Policy effective() {
        Policy p = policy;
        for (RunEgress r : active) if (r.narrowing != null) p = p.narrow(r.narrowing);
        return p;
    }

    /** Every active run's narrowing together, or null when none narrowed (an approval grant then reaches the connection). */
    Policy narrowings() {
        Policy p = null;
        for (RunEgress r : active) if (r.narrowing != null) p = p == null ? r.narrowing : p.narrow(r.narrowing);
        return p;
    }

    @Override
    public Tunnel.Sink onOpen(Tunnel tunnel) {
        if (proxy == null) {
            String why = "no egress is configured on this server (the operator config has no egress section)";
            for (RunEgress r : active) r.add("*", 0, why);
            tunnel.reset(why);
            return NO_SINK;
        }
        RunEgress owner = tunnel.execChannel() == 0 ? null : byExec.get(tunnel.execChannel());
        EgressContext ctx = owner != null
                ? new EgressContext(workspaceId, owner.runId, owner.narrowing == null ? policy : policy.narrow(owner.narrowing),
                        owner::record, secrets, tenantId, owner.narrowing)
                : new EgressContext(workspaceId, null, effective(), this::onDecision, secrets, tenantId, narrowings());
        // Flow control end to end (when the agent has CAP_TUNNEL_WINDOW): upstream bytes the tunnel cannot send yet make
        // the proxy stop reading the upstream until the agent's credit returns; the client's bytes are credited back
        // to the agent only once the proxy took them, so a slow upstream stops the client instead of growing host memory.
        java.util.concurrent.atomic.AtomicLong withheld = new java.util.concurrent.atomic.AtomicLong();
        ProxyConnection[] handle = new ProxyConnection[1];
        ProxyConnection conn = proxy.attach(ctx, new ClientSink() {
            @Override public void write(ByteBuffer toClient) {
                if (!tunnel.write(toClient)) {
                    handle[0].clientWritable(false);
                    if (tunnel.writable()) handle[0].clientWritable(true); // drained meanwhile: onWritable may have come first
                }
            }
            @Override public void shutdownOutput() { tunnel.shutdownOutput(); }
            @Override public void reset(String reason) { tunnel.reset(reason); }
            @Override public void proxyWritabilityChanged(boolean writable) {
                if (writable) tunnel.consumed((int) withheld.getAndSet(0)); // at most the tunnel's window
            }
        });
        handle[0] = conn;
        open.incrementAndGet();
        java.util.concurrent.atomic.AtomicBoolean counted = new java.util.concurrent.atomic.AtomicBoolean(true);
        Runnable closed = () -> {
            if (counted.getAndSet(false)) open.decrementAndGet();
        };
        return new Tunnel.Sink() {
            @Override public void onData(ByteBuffer data) {
                int n = data.remaining();
                if (conn.write(data)) {
                    tunnel.consumed(n);
                } else {
                    withheld.addAndGet(n); // returned when the proxy says it can take more
                    if (conn.writable()) tunnel.consumed((int) withheld.getAndSet(0)); // it may have said so already
                }
            }
            @Override public void onClose() { closed.run(); conn.shutdownInput(); }
            @Override public void onReset(String reason) { closed.run(); conn.abort(reason); }
            @Override public void onWritable() { conn.clientWritable(true); }
        };
    }

    /** A decision on a connection no run could be attributed: every active run hears of a denial. */
    private void onDecision(Decision d) {
        for (RunEgress r : active) r.record(d);
    }

    public void forget() {
        if (proxy != null) proxy.forgetWorkspace(workspaceId);
    }

    private static final Tunnel.Sink NO_SINK = new Tunnel.Sink() {
        @Override public void onData(ByteBuffer data) { }
        @Override public void onClose() { }
        @Override public void onReset(String reason) { }
    };
}
