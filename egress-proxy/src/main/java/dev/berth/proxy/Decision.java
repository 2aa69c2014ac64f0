package dev.berth.proxy;

import java.time.Instant;

/**
 * One policy decision.
 *
 * @param kind "connect", "http", or "https" (a request inside a TLS connection intercepted for credential injection)
 * @param host canonical host (punycode, lowercase) or IP literal, as requested
 * @param resolvedAddress the vetted address that was (or would have been) dialed, or null
 * @param reason why; always names the offending value for denials
 */
public record Decision(String workspaceId, String runId, String connectionId, String kind, String host, int port,
                       String resolvedAddress, boolean allowed, String reason, Instant at) {}
