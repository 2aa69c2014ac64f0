package dev.berth.engine;

import dev.berth.engine.workspace.Store;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Which images the workspaces and snapshots of a home use, read from their records on disk (so that
 * {@code berth image rm} and {@code gc} can check it with or without a server running). A workspace is on disk from
 * the end of its open: an image removed while a workspace on it is being opened fails that open, never the reverse.
 */
public final class ImageUsage {
    private ImageUsage() {}

    static String label(String id, String name) {
        return "workspace " + id + (name == null ? "" : " (" + name + ")");
    }

    /** digest -> "workspace ID (NAME)" / "snapshot ID (NAME)" for everything recorded in {@code home}. */
    public static Map<String, List<String>> of(Path home) throws IOException {
        Store store = new Store(home);
        Map<String, List<String>> out = new TreeMap<>();
        for (Path d : Store.children(store.workspaces)) {
            if (!Files.isRegularFile(d.resolve("workspace.meta"))) continue;
            Store.WorkspaceRecord r = store.loadWorkspace(d);
            if (r.image() != null) {
                out.computeIfAbsent(r.image().digest(), k -> new ArrayList<>())
                        .add(label(r.id(), r.name()));
            }
        }
        for (Path d : Store.children(store.snapshots)) {
            if (!Files.isRegularFile(d.resolve("snapshot.meta"))) continue;
            Store.SnapshotRecord r = store.loadSnapshot(d);
            if (r.image() != null) out.computeIfAbsent(r.image().digest(), k -> new ArrayList<>()).add("snapshot " + r.id() + " (" + r.name() + ")");
        }
        return out;
    }
}
