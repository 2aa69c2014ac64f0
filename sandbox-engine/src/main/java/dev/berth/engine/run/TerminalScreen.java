package dev.berth.engine.run;

import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.jline.builtins.ScreenTerminal;

/**
 * What a terminal process's screen shows now: its output fed through a VT100/xterm screen model (JLine's
 * {@link ScreenTerminal}: cursor movement, erase, scroll regions, the alternate screen, wrapping), so an agent can read
 * a TUI as text instead of escape codes. Thread-safe (every method synchronized).
 *
 * <p>Implementation notes: the model is slow (about 1.5 MB/s of scrolling output here), so output is not fed as it
 * arrives, which would hold up the agent connection's reader: it is kept (bounded) and rendered when the screen is
 * read. When more than {@link #PENDING_MAX} arrives between two reads, the model starts afresh from the newest
 * {@link #KEEP} bytes (cut at a line or escape boundary): what scrolled away is not on the screen anyway, and a TUI
 * repaints often; modes set before the cut (the alternate screen, a scroll region) are then forgotten. Output is
 * UTF-8 decoded across chunk boundaries.
 */
final class TerminalScreen {
    static final int PENDING_MAX = 256 * 1024;
    static final int KEEP = 64 * 1024;

    private ScreenTerminal screen;
    private final CharsetDecoder utf8 = StandardCharsets.UTF_8.newDecoder()
            .onMalformedInput(CodingErrorAction.REPLACE).onUnmappableCharacter(CodingErrorAction.REPLACE);
    private ByteBuffer partial = ByteBuffer.allocate(0);
    private byte[] pending = new byte[4096];
    private int pendingLen;
    private int cols;
    private int rows;

    TerminalScreen(int cols, int rows) {
        this.screen = new ScreenTerminal(cols, rows);
        this.cols = cols;
        this.rows = rows;
    }

    /** Keeps output for the next rendering; cheap (a copy), so it can run on the connection's reader thread. */
    synchronized void feed(byte[] data) {
        if (pendingLen + data.length > PENDING_MAX) {
            byte[] all = Arrays.copyOf(pending, pendingLen + data.length);
            System.arraycopy(data, 0, all, pendingLen, data.length);
            int from = boundary(all, all.length - KEEP);
            pending = Arrays.copyOfRange(all, from, Math.max(all.length, from + 4096));
            pendingLen = all.length - from;
            screen = new ScreenTerminal(cols, rows); // a fresh model: the cut output is replayed on it
            partial = ByteBuffer.allocate(0);
            utf8.reset();
            return;
        }
        if (pendingLen + data.length > pending.length) pending = Arrays.copyOf(pending, Math.max(pending.length * 2, pendingLen + data.length));
        System.arraycopy(data, 0, pending, pendingLen, data.length);
        pendingLen += data.length;
    }

    /** The first line or escape-sequence start at or after {@code from}, so a replay does not begin mid-sequence. */
    private static int boundary(byte[] b, int from) {
        for (int i = Math.max(0, from); i < b.length; i++) if (b[i] == '\n' || b[i] == 0x1b) return i;
        return Math.max(0, from);
    }

    private void render() {
        if (pendingLen == 0) return;
        ByteBuffer in = ByteBuffer.allocate(partial.remaining() + pendingLen);
        in.put(partial).put(pending, 0, pendingLen).flip();
        pendingLen = 0;
        CharBuffer out = CharBuffer.allocate(in.remaining() + 1);
        utf8.decode(in, out, false);
        partial = in.slice(); // an incomplete sequence at the end waits for the next chunk
        out.flip();
        if (out.hasRemaining()) screen.write(out);
        screen.read(); // answers the model would send back (cursor reports) are not typed into the process
        if (pending.length > 64 * 1024) pending = new byte[4096];
    }

    synchronized void resize(int cols, int rows) {
        render(); // what came before the resize was drawn at the old size
        screen.setSize(cols, rows);
        this.cols = cols;
        this.rows = rows;
    }

    /** The screen's rows, trailing blanks trimmed, joined by newlines; trailing empty rows dropped. */
    synchronized String text() {
        render();
        String[] lines = screen.toString().replace('\0', ' ').split("\n", -1); // cells a resize added hold NUL
        StringBuilder b = new StringBuilder();
        int last = -1;
        for (int i = 0; i < lines.length && i < rows; i++) if (!lines[i].isBlank()) last = i;
        for (int i = 0; i <= last; i++) {
            b.append(lines[i].stripTrailing());
            if (i < last) b.append('\n');
        }
        return b.toString();
    }
}
