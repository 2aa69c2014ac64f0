package dev.berth.mcp.tools;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/** The text mirror repeats small results, never binary content, and summarises long fields of large results. */
class MirrorTest {
    private static final JsonMapper JSON = JsonMapper.builder().build();

    private static String json(Object o) {
        return JSON.writeValueAsString(o);
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
        JsonNode m = JSON.readTree(Mirror.of(r, MirrorTest::json));
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
        JsonNode m = JSON.readTree(mirror);
        assertEquals("[200000 characters, not repeated in this text: see structuredContent.stdout]", m.path("stdout").asString());
        assertEquals("short", m.path("stderr").asString());
    }
}
