package dev.berth.engine.api;

import com.fasterxml.jackson.annotation.JsonProperty;
import java.time.Instant;

/**
 * One port of a workspace exposed to its user (issue 13). {@code id} is the path segment of the preview URL
 * ({@code <public_url>/p/<id>/}): 160 random bits, so with {@code access = "link"} the URL itself is the capability;
 * with {@code "tenant"} the request must also carry the tenant's token. {@code expiresAt} null: until unexposed or
 * the workspace closes.
 */
public record PortExposure(
        @JsonProperty("id") String id,
        @JsonProperty("workspace") String workspace,
        @JsonProperty("tenant") String tenant,
        @JsonProperty("port") int port,
        @JsonProperty("access") String access,
        @JsonProperty("created_at") Instant createdAt,
        @JsonProperty("expires_at") Instant expiresAt) {
    public static final String TENANT = "tenant";
    public static final String LINK = "link";

    public boolean expired(Instant now) { return expiresAt != null && !now.isBefore(expiresAt); }
}
