package dev.berth.engine.run;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class BoundedOutputTest {
    @Test
    void append_withinLimit_keepsEverything() {
        var o = new BoundedOutput(100);
        o.append("hello ".getBytes(StandardCharsets.UTF_8));
        o.append("world".getBytes(StandardCharsets.UTF_8));
        assertEquals("hello world", o.text());
        assertFalse(o.truncated());
        assertEquals(11, o.totalBytes());
    }

    @Test
    void append_overLimit_keepsHeadAndTailAndCountsAll() {
        var o = new BoundedOutput(10);
        for (int i = 0; i < 1000; i++) o.append(String.valueOf(i % 10).getBytes(StandardCharsets.UTF_8));
        assertTrue(o.truncated());
        assertEquals(1000, o.totalBytes());
        String t = o.text();
        assertTrue(t.startsWith("01234"), t);
        assertTrue(t.endsWith("56789"), t);
        assertTrue(t.contains("990 bytes omitted; 1000 bytes in all"), t);
    }

    @Test
    void append_exactlyLimit_notTruncated() {
        var o = new BoundedOutput(4);
        o.append(new byte[] {'a', 'b', 'c', 'd'});
        assertFalse(o.truncated());
        assertEquals("abcd", o.text());
    }
}
