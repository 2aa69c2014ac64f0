package dev.berth.engine.api;

/**
 * Registry metadata the egress proxy rewrote for a run: which versions of a package it hid, and why (younger than the
 * registry rule's minimum release age, or listed as malicious by the operator's advisory feed). {@code reason} names
 * the package, each hidden version and its cause; {@code count} says how many responses were filtered that way.
 */
public record EgressFiltered(String host, int port, String reason, int count) {}
