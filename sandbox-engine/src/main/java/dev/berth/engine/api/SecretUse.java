package dev.berth.engine.api;

/** A secret binding whose real value the egress proxy put into a run's requests: to which host, how many times. */
public record SecretUse(String secret, String host, int count) {}
