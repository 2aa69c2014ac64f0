package dev.berth.engine;

/** An outbound connection or request from a workspace that the egress proxy refused, and why. */
public record EgressDenial(String host, int port, String reason, int count) {}
