package dev.berth.engine.api;

/**
 * An outbound connection or request from a workspace that the egress proxy refused, and why. {@code host} is null
 * (and {@code port} 0) when the refused bytes named no host: a malformed request, a bare {@code GET /} to the proxy,
 * an HTTP/2 preface, a head that never completed. Such a denial is still reported.
 */
public record EgressDenial(String host, int port, String reason, int count) {}
