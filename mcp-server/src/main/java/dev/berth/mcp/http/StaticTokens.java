package dev.berth.mcp.http;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;

/**
 * Opaque bearer tokens from the operator's config. The config holds only SHA-256 hashes; a presented token is hashed
 * and compared with every configured hash in constant time, without stopping at the first match, so neither the
 * content nor the position of a valid token can be learnt from response timing.
 */
final class StaticTokens {
    private record Entry(String tenant, byte[] hash) {}

    private final List<Entry> entries;

    StaticTokens(List<BearerAuthenticator.TokenHash> tokens) {
        this.entries = tokens.stream().map(t -> new Entry(t.tenant(), HexFormat.of().parseHex(t.sha256()))).toList();
    }

    /** The tenant of a presented token, or null when no configured token matches. */
    String tenantOf(String token) {
        byte[] h = sha256(token);
        String found = null;
        for (Entry e : entries) {
            if (MessageDigest.isEqual(e.hash(), h) && found == null) found = e.tenant();
        }
        return found;
    }

    static byte[] sha256(String s) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JDK has SHA-256", e);
        }
    }
}
