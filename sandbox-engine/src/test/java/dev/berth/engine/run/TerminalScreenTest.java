package dev.berth.engine.run;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** The screen model's wrapper: UTF-8 split across chunks, resize, and a flood between two reads. */
class TerminalScreenTest {
    private static byte[] b(String s) { return s.getBytes(StandardCharsets.UTF_8); }

    @Test
    void utf8SplitAcrossChunks_rendersWhole() {
        TerminalScreen s = new TerminalScreen(20, 3);
        byte[] e = b("é→x");
        for (byte x : e) s.feed(new byte[] {x});
        assertEquals("é→x", s.text());
    }

    @Test
    void floodBetweenReads_boundedAndEndsWithTheNewestLines() {
        TerminalScreen s = new TerminalScreen(40, 5);
        StringBuilder chunk = new StringBuilder();
        for (int i = 0; i < 100_000; i++) chunk.append("line ").append(i).append("\r\n");
        byte[] all = b(chunk.toString());
        for (int off = 0; off < all.length; off += 4096) {
            s.feed(java.util.Arrays.copyOfRange(all, off, Math.min(all.length, off + 4096)));
        }
        long t0 = System.nanoTime();
        String text = s.text();
        assertTrue(text.endsWith("line 99998\nline 99999"), text);
        assertEquals(4, text.split("\n").length, "the newest lines, the cursor's row empty: " + text);
        assertTrue(System.nanoTime() - t0 < 30_000_000_000L, "rendering is bounded by the kept tail");
    }

    @Test
    void resize_appliesAfterWhatCameBefore() {
        TerminalScreen s = new TerminalScreen(10, 2);
        s.feed(b("abcdefghijKL"));
        s.resize(20, 2);
        s.feed(b("\r\nnext"));
        assertEquals("KL\nnext", s.text().replace("abcdefghij\n", ""));
    }
}
