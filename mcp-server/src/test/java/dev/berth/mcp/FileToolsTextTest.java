package dev.berth.mcp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** read_file sends text only when JSON escaping at most doubles it, else base64. */
class FileToolsTextTest {
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
