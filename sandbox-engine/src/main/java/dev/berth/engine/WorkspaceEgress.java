package dev.berth.engine;

import dev.berth.engine.agent.Tunnel;
import dev.berth.engine.agent.TunnelHandler;
import dev.berth.proxy.ClientSink;
import dev.berth.proxy.Decision;
import dev.berth.proxy.EgressContext;
import dev.berth.proxy.EgressProxy;
import dev.berth.proxy.Policy;
import dev.berth.proxy.ProxyConnection;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * Connects a workspace's egress tunnels (what a process inside sent to the agent's proxy port) to the egress proxy,
 * with the workspace's policy, and hands every denial to the runs active at that moment so each run result can list
 * what it was refused.
 *
 * <p>Runs share one sandbox and one uid, so a connection cannot be attributed to one run with certainty. A run that
 * narrows the policy therefore narrows it for the whole workspace while it is active (never widening anything), and
 * a denial is reported to every run active when it happened. Thread-safe.
 */
final class WorkspaceEgress implements TunnelHandler {
    private final EgressProxy proxy;  // null: no egress configured
    private final String workspaceId;
    private final Policy policy;
    private final java.util.Set<String> secrets;
    private final List<RunEgress> active = new CopyOnWriteArrayList<>();
    /** Egress connections open right now: an open connection counts as activity for the idle policy. */
    private final java.util.concurrent.atomic.AtomicInteger open = new java.util.concurrent.atomic.AtomicInteger();

    int openConnections() { return open.get(); }

    WorkspaceEgress(EgressSettings settings, String workspaceId, Policy policy) {
        this(settings, workspaceId, policy, List.of());
    }

    /** @param secrets the workspace's secret bindings: the proxy intercepts TLS to their hosts (and only theirs) */
    WorkspaceEgress(EgressSettings settings, String workspaceId, Policy policy, List<String> secrets) {
        this.proxy = settings == null ? null : settings.proxy();
        this.workspaceId = workspaceId;
        this.policy = policy;
        this.secrets = java.util.Set.copyOf(secrets);
    }

    /**
     * Mints this run's placeholders for {@code names} (the proxy keeps the real values); null when there is nothing
     * to mint. The caller revokes them with {@code close()} when the run returns.
     */
    dev.berth.proxy.CredentialGrant mint(String runId, List<String> names) {
        if (proxy == null || names.isEmpty()) return null;
        return proxy.mint(workspaceId, runId, names);
    }

    Policy policy() { return policy; }

    /** One run's view: its narrowing (or null) and the denials seen while it ran. */
    static final class RunEgress {
        final String runId;
        final Policy narrowing;
        private final Map<String, EgressDenial> denied = new LinkedHashMap<>();

        RunEgress(String runId, Policy narrowing) {
            this.runId = runId;
            this.narrowing = narrowing;
        }

        synchronized void add(String host, int port, String reason) {
            denied.merge(host + ":" + port + ":" + reason, new EgressDenial(host, port, reason, 1),
                    (a, b) -> new EgressDenial(a.host(), a.port(), a.reason(), a.count() + 1));
        }

        synchronized List<EgressDenial> denials() { return new ArrayList<>(denied.values()); }
    }

    RunEgress begin(String runId, Policy narrowing) {
        RunEgress r = new RunEgress(runId, narrowing);
        active.add(r);
        return r;
    }

    void end(RunEgress r) { active.remove(r); }

    /** The workspace policy narrowed by every active run's narrowing. */
    Policy effective() {
        Policy p = policy;
        for (RunEgress r : active) if (r.narrowing != null) p = p.narrow(r.narrowing);
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
        List<RunEgress> runs = List.copyOf(active);
        String runId = runs.size() == 1 ? runs.get(0).runId : null;
        EgressContext ctx = new EgressContext(workspaceId, runId, effective(), this::onDecision, secrets);
        ProxyConnection conn = proxy.attach(ctx, new ClientSink() {
            @Override public void write(ByteBuffer toClient) {
                ByteBuffer copy = ByteBuffer.allocate(toClient.remaining());
                copy.put(toClient).flip();
                tunnel.write(copy);
            }
            @Override public void shutdownOutput() { tunnel.shutdownOutput(); }
            @Override public void reset(String reason) { tunnel.reset(reason); }
        });
        open.incrementAndGet();
        java.util.concurrent.atomic.AtomicBoolean counted = new java.util.concurrent.atomic.AtomicBoolean(true);
        Runnable closed = () -> {
            if (counted.getAndSet(false)) open.decrementAndGet();
        };
        return new Tunnel.Sink() {
            @Override public void onData(ByteBuffer data) { conn.write(data); }
            @Override public void onClose() { closed.run(); conn.shutdownInput(); }
            @Override public void onReset(String reason) { closed.run(); conn.abort(reason); }
        };
    }

    private void onDecision(Decision d) {
        if (d.allowed()) return;
        for (RunEgress r : active) r.add(d.host(), d.port(), d.reason());
    }

    void forget() {
        if (proxy != null) proxy.forgetWorkspace(workspaceId);
    }

    private static final Tunnel.Sink NO_SINK = new Tunnel.Sink() {
        @Override public void onData(ByteBuffer data) { }
        @Override public void onClose() { }
        @Override public void onReset(String reason) { }
    };
}
