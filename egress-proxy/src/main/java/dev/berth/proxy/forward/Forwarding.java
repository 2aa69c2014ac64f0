package dev.berth.proxy.forward;

import dev.berth.proxy.credentials.CredentialRegistry;
import dev.berth.proxy.supply.SupplyGuard;

/**
 * What the forwarding handlers share proxy-wide beyond a session's own state: the credential registry (placeholder
 * substitution) and the supply-chain guard (release-age and advisory checks). Immutable; both parts are thread-safe.
 */
public record Forwarding(CredentialRegistry credentials, SupplyGuard supply) {}
