package dev.berth.engine.run;

import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import org.jline.builtins.ScreenTerminal;

/**
 * What a terminal process's screen shows now: its output fed through a VT100/xterm screen model (JLine's
 * {@link ScreenTerminal}: cursor movement, erase, scroll regions, the alternate screen, wrapping), so an agent can read
 * a TUI as text instead of escape codes. Output arrives in chunks that may split a UTF-8 sequence; the decoder keeps
 * the partial bytes for the next chunk. Thread-safe (every method synchronized).
 */
final class TerminalScreen {
    private final ScreenTerminal screen;
    private final CharsetDecoder utf8 = StandardCharsets.UTF_8.newDecoder()
            .onMalformedInput(CodingErrorAction.REPLACE).onUnmappableCharacter(CodingErrorAction.REPLACE);
    private ByteBuffer pending = ByteBuffer.allocate(0);
    private int cols;
    private int rows;

    TerminalScreen(int cols, int rows) {
        this.screen = new ScreenTerminal(cols, rows);
        this.cols = cols;
        this.rows = rows;
    }

    synchronized void feed(byte[] data) {
        ByteBuffer in = ByteBuffer.allocate(pending.remaining() + data.length);
        in.put(pending).put(data).flip();
        CharBuffer out = CharBuffer.allocate(in.remaining() + 1);
        utf8.decode(in, out, false);
        pending = in.slice(); // an incomplete sequence at the end waits for the next chunk
        out.flip();
        if (out.hasRemaining()) screen.write(out);
        answerQueries();
    }

    /** Answers the screen model would send back (cursor position reports) are not typed into the process. */
    private void answerQueries() { screen.read(); }

    synchronized void resize(int cols, int rows) {
        screen.setSize(cols, rows);
        this.cols = cols;
        this.rows = rows;
    }

    /** The screen's rows, trailing blanks trimmed, joined by newlines; trailing empty rows dropped. */
    synchronized String text() {
        String[] lines = screen.toString().split("\n", -1);
        StringBuilder b = new StringBuilder();
        int last = -1;
        for (int i = 0; i < lines.length && i < rows; i++) if (!lines[i].isBlank()) last = i;
        for (int i = 0; i <= last; i++) {
            b.append(lines[i].stripTrailing());
            if (i < last) b.append('\n');
        }
        return b.toString();
    }

    synchronized int cols() { return cols; }

    synchronized int rows() { return rows; }
}
