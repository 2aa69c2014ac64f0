/**
 * The JSON-RPC boundary in front of the MCP Java SDK: every inbound message is size-capped, depth-bounded, parsed and
 * checked here before the SDK sees it, and every refusal is answered with a JSON-RPC error in Berth's own words.
 *
 * <p>Why: the SDK's stdio transport stops reading after the first message it cannot parse, and its error replies carry
 * exception texts. Both transports (stdio in {@code dev.berth.mcp.stdio}, HTTP in {@code dev.berth.mcp.http}) use the same
 * {@link dev.berth.mcp.jsonrpc.MessageCheck} and the same {@link dev.berth.mcp.jsonrpc.WireLimits}.
 */
package dev.berth.mcp.jsonrpc;
