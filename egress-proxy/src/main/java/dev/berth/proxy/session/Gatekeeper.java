package dev.berth.proxy.session;

import dev.berth.proxy.net.AddressClassifier;
import dev.berth.proxy.net.HostNames;
import dev.berth.proxy.net.Resolver;
import dev.berth.proxy.policy.InternalHosts;
import dev.berth.proxy.policy.Policy;
import java.net.InetAddress;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The decision pipeline for one target (host, port), in this order:
 * <ol>
 *   <li>normalize the host (IDNA, case, trailing dot, IP-literal spellings) - invalid = deny;</li>
 *   <li>match against the effective policy (ceiling intersected with the context policy);</li>
 *   <li>IP literal: classify it directly. Name: resolve (off the event loop, with timeout);</li>
 *   <li>classify every resolved address; any non-public one denies the whole name, because a
 *       name that mixes public and internal addresses is exactly what rebinding looks like;</li>
 *   <li>return the single vetted {@link InetAddress} the caller must dial. The caller never
 *       resolves again, so a second DNS answer cannot change where the bytes go.</li>
 * </ol>
 */
public final class Gatekeeper {
    /** Outcome: allowed with the address to dial, or denied with a reason. */
    public record Vetted(boolean allowed, String host, int port, InetAddress address, String reason) {
        public String addressText() {
            return address == null ? null : HostNames.canonicalIp(address);
        }
    }

    private final Settings config;
    private final Resolver resolver;
    private final ExecutorService resolverThreads;
    private final ApprovalGate approvals;

    public Gatekeeper(Settings config, Resolver resolver, ExecutorService resolverThreads) {
        this(config, resolver, resolverThreads, null);
    }

    /** @param approvals live human-approved grants consulted when the policy refuses (null: none) */
    public Gatekeeper(Settings config, Resolver resolver, ExecutorService resolverThreads, ApprovalGate approvals) {
        this.config = config;
        this.resolver = resolver;
        this.resolverThreads = resolverThreads;
        this.approvals = approvals;
    }

    /**
     * The verdict for a connection's target: the session's effective policy, or else a live approval grant of its
     * workspace for exactly this host and port (then the session is registered with the grant, which closes it when
     * the grant expires). Hard rules (resolution, address classification) apply either way.
     */
    public CompletableFuture<Vetted> decide(Session session, String rawHost, int port) {
        return decide(session.effective(), rawHost, port, session);
    }

    /** Effective policy for a context: never wider than the operator ceiling. */
    public Policy effective(Owner ctx) {
        return config.ceiling().narrow(ctx.policy());
    }

    /** Completes (possibly on a resolver thread) with the verdict; never completes exceptionally. */
    public CompletableFuture<Vetted> decide(Policy effective, String rawHost, int port) {
        return decide(effective, rawHost, port, null);
    }

    private CompletableFuture<Vetted> decide(Policy effective, String rawHost, int port, Session session) {
        HostNames.Host host;
        try {
            host = HostNames.normalize(rawHost);
        } catch (HostNames.InvalidHostException e) {
            return CompletableFuture.completedFuture(new Vetted(false, HostNames.printable(rawHost), port, null, e.getMessage()));
        }
        String canonical = host.canonical();
        Policy.Verdict verdict = effective.check(host, port);
        Policy narrowing = session == null ? null : session.context().narrowing();
        if (!verdict.allowed() && approvals != null && session != null && narrowing != null && !narrowing.check(host, port).allowed()) {
            // a grant widens the workspace, never a run that narrowed its own egress to exclude the target
            verdict = new Policy.Verdict(false, verdict.reason() + "; an approval grant does not apply: the run narrowed its egress and "
                    + canonical + ":" + port + " is not in its narrowing");
        } else if (!verdict.allowed() && approvals != null && session != null) {
            String granted = approvals.allowedBy(session, canonical, port);
            if (granted != null) {
                verdict = new Policy.Verdict(true, granted);
            } else if (approvals.approvable(canonical, port)) {
                verdict = new Policy.Verdict(false, verdict.reason() + "; " + canonical + ":" + port
                        + " is approvable: a human can grant it to this workspace for a while");
            }
        }
        if (!verdict.allowed()) {
            return CompletableFuture.completedFuture(new Vetted(false, canonical, port, null, verdict.reason()));
        }
        if (host.isLiteral()) {
            return CompletableFuture.completedFuture(vet(canonical, port, List.of(host.literal()), verdict.reason(), "IP literal"));
        }
        try {
            return resolveAndVet(canonical, port, verdict.reason());
        } catch (java.util.concurrent.RejectedExecutionException e) {
            return CompletableFuture.completedFuture(new Vetted(false, canonical, port, null,
                    "DNS resolution of '" + canonical + "' refused: resolver queue full"));
        }
    }

    private CompletableFuture<Vetted> resolveAndVet(String canonical, int port, String policyReason) {
        return CompletableFuture.supplyAsync(() -> {
                    try {
                        List<InetAddress> addrs = resolver.resolve(canonical);
                        if (addrs == null || addrs.isEmpty()) {
                            return new Vetted(false, canonical, port, null, "host '" + canonical + "' resolved to no addresses");
                        }
                        return vet(canonical, port, addrs, policyReason, "host '" + canonical + "' resolved to");
                    } catch (Exception e) {
                        return new Vetted(false, canonical, port, null, "DNS resolution of '" + canonical + "' failed: " + e);
                    }
                }, resolverThreads)
                .completeOnTimeout(null, config.dnsTimeout().toMillis(), TimeUnit.MILLISECONDS)
                .thenApply(v -> v != null ? v : new Vetted(false, canonical, port, null,
                        "DNS resolution of '" + canonical + "' timed out after " + config.dnsTimeout().toMillis() + " ms"))
                .exceptionally(t -> new Vetted(false, canonical, port, null, "DNS resolution of '" + canonical + "' failed: "
                        + (t instanceof TimeoutException ? "timeout" : t.toString())));
    }

    private Vetted vet(String host, int port, List<InetAddress> addrs, String policyReason, String what) {
        boolean literal = what.equals("IP literal");
        InternalHosts internal = config.internalHosts();
        String allowance = null;
        for (InetAddress a : addrs) {
            AddressClassifier.Result r = AddressClassifier.classify(a);
            if (r.isPublic()) continue;
            if (r.kind() == AddressClassifier.Kind.LOOPBACK && config.unsafeAllowLoopbackUpstreams()) continue;
            // a named internal host may resolve into its stated ranges: names only, never a literal, never wider
            String allowed = literal ? null : internal.allowance(host, a);
            if (allowed != null) {
                allowance = allowed;
                continue;
            }
            String prefix = literal ? "IP literal '" + host + "' refused: " : what + " " + HostNames.canonicalIp(a) + ", refused: ";
            InternalHosts.Entry named = literal ? null : internal.entry(host);
            String outside = named == null ? "" : " (internal_hosts allows " + host + " only in " + named.ranges().stream()
                    .map(InternalHosts.Range::toString).toList() + ")";
            return new Vetted(false, host, port, a, prefix + r.description() + outside);
        }
        InetAddress chosen = addrs.get(0);
        AddressClassifier.Result c = AddressClassifier.classify(chosen);
        String note = c.isPublic() ? "" : c.kind() == AddressClassifier.Kind.LOOPBACK && config.unsafeAllowLoopbackUpstreams()
                ? " (loopback permitted by unsafeAllowLoopbackUpstreams)" : " (" + internal.allowance(host, chosen) + ")";
        if (allowance != null && c.isPublic()) note = " (some answers allowed by internal_hosts: " + allowance + ")";
        return new Vetted(true, host, port, chosen, policyReason + "; dialing " + HostNames.canonicalIp(chosen) + note);
    }
}
