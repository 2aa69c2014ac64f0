package dev.berth.engine.api;

import java.util.List;

/** A directory's entries (not recursive), sorted by name; {@code truncated} when more than the limit exist. */
public record FileListing(String path, List<Entry> entries, boolean truncated) {
    /** {@code type} is "file", "dir", "symlink" or "other"; {@code modifiedEpochSeconds} from the sandbox's clock. */
    public record Entry(String name, String type, long size, int mode, long modifiedEpochSeconds) {}
}
