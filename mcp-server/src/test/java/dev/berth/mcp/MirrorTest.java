package dev.berth.mcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

/** The text mirror repeats small results, never binary content, and summarises long fields of large results. */
class MirrorTest {
    private static String json(Object o) {
        return McpBridge.JSON.writeValueAsString(o);
    }

    @Test
    void of_smallResult_isTheResultsJson() {
        Map<String, Object> r = new LinkedHashMap<>(Map.of("exit_code", 0, "stdout", "hi\n"));
        assertEquals(json(r), Mirror.of(r, MirrorTest::json));
    }

    @Test
    void of_binaryContent_isSummarisedHoweverSmall() {
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("encoding", "base64");
        r.put("content", "AAEC");
        r.put("bytes", 3);
        JsonNode m = McpBridge.JSON.readTree(Mirror.of(r, MirrorTest::json));
        assertEquals("[4 characters of base64, not repeated in this text: see structuredContent.content]", m.path("content").asString());
        assertEquals(3, m.path("bytes").asInt());
    }

    @Test
    void of_largeResult_summarisesLongFieldsAndKeepsShortOnes() {
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("stdout", "x".repeat(200_000));
        r.put("stderr", "short");
        String mirror = Mirror.of(r, MirrorTest::json);
        assertTrue(mirror.length() < 1000, mirror);
        JsonNode m = McpBridge.JSON.readTree(mirror);
        assertEquals("[200000 characters, not repeated in this text: see structuredContent.stdout]", m.path("stdout").asString());
        assertEquals("short", m.path("stderr").asString());
    }

    @Test
    void textIfCompact_keepsSourceAndNewlineHeavyText_sendsControlCharactersAsBase64() {
        assertEquals("int main() { return \"x\"; }\n", FileTools.textIfCompact("int main() { return \"x\"; }\n".getBytes(StandardCharsets.UTF_8)));
        assertEquals("1\n2\n3\n", FileTools.textIfCompact("1\n2\n3\n".getBytes(StandardCharsets.UTF_8)));
        assertEquals("h\u00e9llo \u6f22\u5b57", FileTools.textIfCompact("h\u00e9llo \u6f22\u5b57".getBytes(StandardCharsets.UTF_8)));
        assertNull(FileTools.textIfCompact(new byte[] {1, 2, 3, 1, 2, 3}), "control characters escape to 6 bytes each");
        assertNull(FileTools.textIfCompact(new byte[] {'a', 0, 'b'}), "NUL");
        assertNull(FileTools.textIfCompact(new byte[] {(byte) 0xff, 'a'}), "not UTF-8");
    }
}
