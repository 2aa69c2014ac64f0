package dev.berth.mcp.http;

import dev.berth.mcp.OperatorConfig;

/**
 * Turns an {@code Authorization} header into a tenant: JWTs go to the issuer's keys when JWT auth is configured,
 * anything else is looked up among the operator's static tokens. Denials carry the reason, never the token.
 */
public final class BearerAuthenticator {
    private final OperatorConfig config;
    private final StaticTokens tokens;
    private final JwtTokens jwt;

    public BearerAuthenticator(OperatorConfig config) throws OperatorConfig.ConfigException {
        this.config = config;
        this.tokens = new StaticTokens(config.auth().tokens());
        this.jwt = config.auth().jwt() == null ? null : new JwtTokens(config.auth().jwt());
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
        if (!config.tenants().containsKey(tenant)) {
            return new AuthResult.Denied(403, "insufficient_scope", "tenant '" + tenant + "' named by the token is not a tenant of this server");
        }
        return new AuthResult.Granted(config.tenant(tenant), via);
    }
}
