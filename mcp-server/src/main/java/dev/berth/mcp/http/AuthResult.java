package dev.berth.mcp.http;

import dev.berth.engine.api.Tenant;

/** The outcome of checking a bearer token: the tenant it stands for, or why it was refused. */
public sealed interface AuthResult {
    /** @param via how the tenant was established (for the log): "token" or "jwt" */
    record Granted(Tenant tenant, String via) implements AuthResult {}

    /**
     * @param status      401 for a missing or invalid token, 403 for a valid token that grants nothing here
     * @param error       the RFC 6750 error code ({@code invalid_token}, {@code insufficient_scope}) or null
     * @param description why, for the client and the operator
     */
    record Denied(int status, String error, String description) implements AuthResult {}
}
