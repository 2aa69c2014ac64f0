package dev.berth.engine.workspace;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Which runs of a workspace are in flight, on disk ({@code <workspace>/runs.journal}), so that the server after a
 * crash can say which runs it lost instead of pretending nothing happened (it never repeats them). One line per
 * start ({@code S <id> <kind> <command, escaped, at most 200 chars>}) and per end ({@code E <id>}); the file is
 * emptied whenever no run is in flight. Lines are written without fsync: they must survive the server process
 * dying ({@code kill -9}, OOM), which the page cache does, not the host losing power. Thread-safe.
 */
public final class RunJournal {
    static final String FILE = "runs.journal";
    private static final int MAX_COMMAND = 200;

    private final Path file;
    private int open;

    RunJournal(Path workspaceDir) { this.file = workspaceDir.resolve(FILE); }

    /** A run that was in flight when the previous server stopped. */
    public record Lost(String id, String kind, String command) {}

    public synchronized void started(String id, String kind, String command) {
        open++;
        String c = command.length() > MAX_COMMAND ? command.substring(0, MAX_COMMAND) + "..." : command;
        append("S " + id + " " + kind + " " + c.replace("\\", "\\\\").replace("\n", "\\n") + "\n");
    }

    public synchronized void ended(String id) {
        open = Math.max(0, open - 1);
        if (open == 0) {
            // emptied, not deleted: the next run appends to it again instead of creating it (an unlink and a create
            // per run on the hot path); an empty journal names no lost run
            try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
                ch.truncate(0);
            } catch (IOException ignored) {
                // a stale journal only makes the next recovery report a run that did finish; never loses one
            }
        } else {
            append("E " + id + "\n");
        }
    }

    private void append(String line) {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE, StandardOpenOption.APPEND)) {
            ch.write(ByteBuffer.wrap(line.getBytes(StandardCharsets.UTF_8)));
        } catch (IOException ignored) {
            // the journal is diagnostics: a full disk must not fail the run itself
        }
    }

    /** Reads what a previous server left (runs started and never ended) and clears the journal. */
    public static List<Lost> takeLost(Path workspaceDir) {
        Path f = workspaceDir.resolve(FILE);
        Map<String, Lost> open = new LinkedHashMap<>();
        try {
            if (!Files.isRegularFile(f) || Files.size(f) > 1 << 20) return List.of();
            for (String line : Files.readAllLines(f, StandardCharsets.UTF_8)) {
                String[] p = line.split(" ", 4);
                if (p.length == 4 && p[0].equals("S")) open.put(p[1], new Lost(p[1], p[2], p[3].replace("\\n", "\n").replace("\\\\", "\\")));
                else if (p.length == 2 && p[0].equals("E")) open.remove(p[1]);
            }
        } catch (IOException | RuntimeException e) {
            return List.of();
        } finally {
            try { Files.deleteIfExists(f); } catch (IOException ignored) { }
        }
        return new ArrayList<>(open.values());
    }
}
