package dev.berth.mcp.jsonrpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class LineReaderTest {
    private static LineReader reader(String s, int max) {
        return new LineReader(new ByteArrayInputStream(s.getBytes(StandardCharsets.UTF_8)), max);
    }

    private static String text(LineReader.Line l) {
        return new String(l.bytes(), 0, l.length(), StandardCharsets.UTF_8);
    }

    @Test
    void next_crlfAndHalfLineAtEof_areMessages() throws IOException {
        LineReader r = reader("{\"a\":1}\r\n{\"b\":2}\n{\"c\"", 100);
        assertEquals("{\"a\":1}", text(r.next()));
        assertEquals("{\"b\":2}", text(r.next()));
        assertEquals("{\"c\"", text(r.next()));
        assertNull(r.next());
    }

    @Test
    void next_oversizeLine_isDiscardedWithItsSizeAndIdAndTheNextLineIsRead() throws IOException {
        String big = "{\"jsonrpc\":\"2.0\",\"method\":\"tools/call\",\"params\":{\"arguments\":{\"content\":\"" + "x".repeat(300_000)
                + "\"},\"nested\":[[{\"id\":99}]]},\"id\":42}";
        LineReader r = reader(big + "\n{\"ok\":true}\n", 1000);
        LineReader.Line l = r.next();
        assertTrue(l.tooLarge());
        assertEquals(big.length(), l.oversize());
        assertEquals(42L, l.id(), "the top-level id, not the nested one");
        assertEquals("{\"ok\":true}", text(r.next()));
        assertNull(r.next());
    }

    @Test
    void next_oversizeNonJsonLine_hasNoIdAndLeavesTheStreamInStep() throws IOException {
        LineReader r = reader("z".repeat(5000) + "\n" + "[".repeat(5000) + "\n{}\n", 100);
        LineReader.Line a = r.next();
        assertTrue(a.tooLarge());
        assertNull(a.id());
        LineReader.Line b = r.next();
        assertTrue(b.tooLarge());
        assertNull(b.id());
        assertEquals("{}", text(r.next()));
    }

    @Test
    void next_lineOfExactlyMax_isNotOversize() throws IOException {
        LineReader r = reader("y".repeat(64) + "\n", 64);
        LineReader.Line l = r.next();
        assertFalse(l.tooLarge());
        assertEquals(64, l.length());
    }
}
