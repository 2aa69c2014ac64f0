package dev.berth.mcp.jsonrpc;

/**
 * Sizes every transport enforces, chosen so that the largest message either side may send fits what real clients
 * accept with room to spare: the official TypeScript client buffers at most 10 MiB per stdio message, and common HTTP
 * proxies refuse request bodies above a few MiB unless told otherwise. The values live in the limits catalogue
 * ({@code dev.berth.schemas.Limits}, {@code wire.*}). The tool schemas' own limits (read_file
 * max_bytes, write_file content, run max_output_bytes) are derived from these; {@code WireLimitsTest} checks that.
 */
public final class WireLimits {
    /** Largest inbound JSON-RPC message, in bytes, on stdio and HTTP alike. */
    public static final int MAX_MESSAGE_BYTES = dev.berth.schemas.Limits.intValue("wire.inbound_message_bytes");
    /** Largest outbound message; a result that would be larger is replaced by an error naming its size. */
    public static final int MAX_OUTBOUND_BYTES = dev.berth.schemas.Limits.intValue("wire.outbound_message_bytes");
    /** Deepest nesting of arrays and objects accepted in a message, checked before parsing. */
    public static final int MAX_DEPTH = dev.berth.schemas.Limits.intValue("wire.max_depth");

    private WireLimits() {}
}
