package dev.berth.mcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.berth.mcp.jsonrpc.WireLimits;
import dev.berth.mcp.tools.Mirror;
import dev.berth.schemas.ToolCatalog;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The schemas' size limits and the transports' message limits are one budget: the largest request a schema allows
 * fits an inbound message, and the largest result fits an outbound one, which fits the official TypeScript client's
 * 10 MiB stdio buffer with room to spare, even when JSON escaping is at its worst.
 */
class WireLimitsTest {
    static final int TYPESCRIPT_STDIO_BUFFER = 10 * 1024 * 1024;

    @SuppressWarnings("unchecked")
    private static long limit(String tool, String property, String keyword) {
        ToolCatalog.ToolDef def = ToolCatalog.load().tools().stream().filter(t -> t.name().equals(tool)).findFirst().orElseThrow();
        Map<String, Object> props = (Map<String, Object>) def.inputSchema().get("properties");
        return ((Number) ((Map<String, Object>) props.get(property)).get(keyword)).longValue();
    }

    @Test
    void writeFile_largestContent_isBase64OfTheWriteLimit_andFitsAMessage() {
        long content = limit("write_file", "content", "maxLength");
        assertEquals(4L * ((FileTools.MAX_WRITE_BYTES + 2) / 3), content);
        // ASCII-heavy text escapes little; 25% headroom for quotes and newlines plus the envelope
        assertTrue(content * 5 / 4 + 4096 < WireLimits.MAX_MESSAGE_BYTES, content + " characters of content leave no room in a message");
    }

    @Test
    void readFile_largestPage_fitsAnOutboundMessage() {
        long maxBytes = limit("read_file", "max_bytes", "maximum");
        // text at most doubles when escaped (FileTools.textIfCompact), base64 is 4/3; the mirror summarises it
        assertTrue(2 * maxBytes + 2 * Mirror.MAX_CHARS * 2 + 4096 < WireLimits.MAX_OUTBOUND_BYTES);
    }

    @Test
    void run_largestOutput_fitsAnOutboundMessage_evenAllControlCharacters() {
        long perStream = limit("run", "max_output_bytes", "maximum");
        assertTrue(2 * perStream * 6 + 2 * Mirror.MAX_CHARS * 2 + 4096 < WireLimits.MAX_OUTBOUND_BYTES);
    }

    @Test
    void outboundLimit_leavesRoomUnderTheTypeScriptClientsBuffer() {
        assertTrue(WireLimits.MAX_OUTBOUND_BYTES <= TYPESCRIPT_STDIO_BUFFER * 8 / 10);
    }
}
