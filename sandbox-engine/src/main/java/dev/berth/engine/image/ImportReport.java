package dev.berth.engine.image;

import java.util.List;

/**
 * What an import changed or left out of the image, so nothing is dropped silently.
 *
 * @param dropped    entries left out, each with its reason (device nodes, FIFOs), at most {@link #MAX_LINES}
 * @param changed    entries kept but changed, each with the change (setuid/setgid bits cleared), at most {@link #MAX_LINES}
 * @param droppedCount all entries left out (also those beyond the list)
 * @param changedCount all entries changed
 */
public record ImportReport(List<String> dropped, List<String> changed, int droppedCount, int changedCount) {
    public static final int MAX_LINES = 100;

    public ImportReport {
        dropped = List.copyOf(dropped);
        changed = List.copyOf(changed);
    }

    /** One line for the CLI and logs. */
    public String summary() {
        if (droppedCount == 0 && changedCount == 0) return "nothing dropped or changed";
        return droppedCount + " entries dropped (device nodes, FIFOs), " + changedCount
                + " changed (setuid/setgid bits cleared); extended attributes are not kept";
    }

    static final class Builder {
        private final java.util.ArrayList<String> dropped = new java.util.ArrayList<>();
        private final java.util.ArrayList<String> changed = new java.util.ArrayList<>();
        private int droppedCount;
        private int changedCount;

        void dropped(String line) {
            droppedCount++;
            if (dropped.size() < MAX_LINES) dropped.add(line);
        }

        void changed(String line) {
            changedCount++;
            if (changed.size() < MAX_LINES) changed.add(line);
        }

        ImportReport build() { return new ImportReport(dropped, changed, droppedCount, changedCount); }
    }
}
