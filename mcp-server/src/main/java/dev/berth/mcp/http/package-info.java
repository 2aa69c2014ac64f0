/**
 * {@code berth http}: MCP over HTTP for several tenants on one machine.
 *
 * <h2>Request pipeline</h2>
 * One embedded Tomcat ({@link dev.berth.mcp.http.HttpServer}) serves the SDK's Streamable HTTP servlet at
 * {@code /mcp}, its legacy HTTP+SSE servlet at {@code /sse} + {@code /message}, and the OAuth protected resource
 * metadata. Every request passes, in this order:
 * <ol>
 *   <li>{@code HostOriginFilter} (every path): Host and Origin against the operator's lists, 421 / 403 with the value;
 *       first, so a DNS-rebinding page learns nothing, not even whether it would need a token.</li>
 *   <li>{@code BearerAuthFilter} (MCP paths): static token (SHA-256, constant-time) or JWT (issuer's JWKS, iss, aud,
 *       exp/nbf) to a configured {@link dev.berth.engine.api.Tenant}; 401/403 with a reason and
 *       {@code WWW-Authenticate: Bearer resource_metadata=...}.</li>
 *   <li>{@code SessionOwners} (MCP paths): a transport session is usable only by the tenant that opened it; anyone
 *       else gets 404 as for a session that does not exist.</li>
 *   <li>{@code CancellationTap} (MCP POSTs): gives each JSON-RPC request a cancellation key and turns
 *       {@code notifications/cancelled} into {@link dev.berth.mcp.tools.Cancellations#cancel}.</li>
 * </ol>
 * What the filters established reaches the tool handlers through the SDK's transport context
 * ({@link dev.berth.mcp.http.CallContext#EXTRACTOR}); the handlers never see HTTP.
 *
 * <h2>Tenancy</h2>
 * Isolation is enforced once, in the engine: every engine call takes the tenant resolved here, and another tenant's
 * workspace or snapshot is NOT_FOUND there. This package's job is only to resolve the right tenant, fail closed when
 * it cannot (a request without one is a wiring bug, never the default tenant), and keep transport sessions from
 * being shared.
 *
 * <h2>Cancellation</h2>
 * The SDK (2.1.0) ignores {@code notifications/cancelled}. The tap (HTTP) and {@code CancellableSessions} (stdio)
 * observe it without forking the SDK; {@link dev.berth.mcp.tools.Cancellations} interrupts the handler thread of the named
 * call, and the engine's runner answers the interrupt by killing the command's process tree in the workspace. Keys
 * carry tenant, transport session and request id, so a client can cancel only its own calls.
 */
package dev.berth.mcp.http;
