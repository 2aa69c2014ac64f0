package dev.berth.mcp.http;

import dev.berth.engine.api.Tenant;
import java.util.List;
import java.util.function.Function;

/**
 * Turns an {@code Authorization} header into a tenant: JWTs go to the issuer's keys when JWT auth is configured,
 * anything else is looked up among the operator's static tokens. Denials carry the reason, never the token.
 * Immutable after construction; thread-safe.
 */
public final class BearerAuthenticator {
    /** A static bearer token of a tenant, as the hex SHA-256 of the token (the operator's file holds no secret). */
    public record TokenHash(String tenant, String sha256) {}

    /**
     * JWT access tokens from the operator's authorization server.
     *
     * @param audience    expected {@code aud} (this server's resource URL by default, set by the config)
     * @param jwksFile    the issuer's public keys (a JWKS document)
     * @param tenantClaim the claim naming the tenant
     */
    public record Jwt(String issuer, String audience, String jwksFile, String tenantClaim) {}

    /** The JWKS file of the JWT settings cannot be used; the message names the file and why, as the config key says. */
    public static final class KeysException extends Exception {
        KeysException(String message) { super(message); }
    }

    private final Function<String, Tenant> tenants;
    private final StaticTokens tokens;
    private final JwtTokens jwt;

    /**
     * @param jwt     null without JWT authentication
     * @param tenants the tenant of each configured tenant id, null for an id that is not a tenant of this server
     */
    public BearerAuthenticator(List<TokenHash> tokens, Jwt jwt, Function<String, Tenant> tenants) throws KeysException {
        this.tenants = tenants;
        this.tokens = new StaticTokens(tokens);
        this.jwt = jwt == null ? null : new JwtTokens(jwt);
    }

    public AuthResult authenticate(String authorizationHeader) {
        if (authorizationHeader == null || authorizationHeader.isBlank()) {
            // RFC 6750 §3.1: no error code when the request carried no credentials at all
            return new AuthResult.Denied(401, null, "this server needs a bearer token (Authorization: Bearer <token>)");
        }
        if (!authorizationHeader.regionMatches(true, 0, "Bearer ", 0, 7)) {
            String scheme = authorizationHeader.split(" ", 2)[0];
            return new AuthResult.Denied(401, "invalid_request", "authorization scheme '" + scheme + "' is not supported; use Bearer");
        }
        String token = authorizationHeader.substring(7).strip();
        String tenant;
        String via;
        if (jwt != null && JwtTokens.looksLikeJwt(token)) {
            try {
                tenant = jwt.tenantOf(token);
            } catch (JwtTokens.InvalidTokenException e) {
                return new AuthResult.Denied(401, "invalid_token", e.getMessage());
            }
            via = "jwt";
        } else {
            tenant = tokens.tenantOf(token);
            if (tenant == null) return new AuthResult.Denied(401, "invalid_token", "the bearer token is not valid for this server");
            via = "token";
        }
        Tenant granted = tenants.apply(tenant);
        if (granted == null) {
            return new AuthResult.Denied(403, "insufficient_scope", "tenant '" + tenant + "' named by the token is not a tenant of this server");
        }
        return new AuthResult.Granted(granted, via);
    }
}
