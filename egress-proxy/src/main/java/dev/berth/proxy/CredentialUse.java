package dev.berth.proxy;

/**
 * How often one binding's value was injected into requests to one host during a grant.
 *
 * @param binding binding name
 * @param host canonical host the requests went to
 * @param count requests forwarded with the value injected
 */
public record CredentialUse(String binding, String host, int count) {}
