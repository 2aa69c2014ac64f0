package dev.berth.proxy.session;

import dev.berth.proxy.policy.Policy;
import dev.berth.proxy.policy.RegistryRule;
import java.time.Duration;
import java.util.List;
import java.util.Set;

/**
 * The operator's settings as the connection machinery reads them, taken from the proxy's configuration when the
 * proxy starts (so the machinery never reads the public configuration type, and the root package can wire it without
 * a package cycle). Immutable.
 *
 * @param ceiling the operator's allowlist; every connection's policy is narrowed to it
 * @param maxHeaderBytes the largest request head
 * @param maxHeaderCount the most header fields in a request head
 * @param headerTimeout how long a request head (or a TLS ClientHello) may take
 * @param idleTimeout how long a connection may pass no traffic
 * @param connectTimeout how long dialing an upstream may take
 * @param dnsTimeout how long resolving a name may take
 * @param maxTunnelsPerWorkspace open upstreams per workspace
 * @param maxBytesPerWorkspace bytes per workspace per quota window, heads and bodies
 * @param quotaWindow the byte quota's window
 * @param maxConnectsPerSecond connection setups per workspace per second
 * @param maxMetadataBytes the largest registry metadata document the proxy reads or rewrites
 * @param tlsPorts ports whose tunnels get the SNI check (and interception where a secret or rule asks for it)
 * @param registryRules the operator's registry rules
 * @param unsafeAllowLoopbackUpstreams tests and benchmarks only: loopback upstreams are allowed
 * @param shaping bursts, the longest wait for a turn, and the tenants' quotas
 * @param internalHosts named hosts that may resolve into stated non-public ranges
 */
public record Settings(Policy ceiling, int maxHeaderBytes, int maxHeaderCount, Duration headerTimeout, Duration idleTimeout, Duration connectTimeout,
                       Duration dnsTimeout, int maxTunnelsPerWorkspace, long maxBytesPerWorkspace, Duration quotaWindow,
                       int maxConnectsPerSecond, int maxMetadataBytes, Set<Integer> tlsPorts,
                       List<RegistryRule> registryRules, boolean unsafeAllowLoopbackUpstreams, Shaping shaping,
                       dev.berth.proxy.policy.InternalHosts internalHosts) {
    public Settings {
        tlsPorts = Set.copyOf(tlsPorts);
        registryRules = List.copyOf(registryRules);
    }

    /** The rule for a host, or null. */
    public RegistryRule registryRule(String canonicalHost) {
        for (RegistryRule r : registryRules) if (r.matchesHost(canonicalHost)) return r;
        return null;
    }
}
