package dev.berth.engine.workspace;

import dev.berth.engine.api.ImageRef;
import dev.berth.engine.api.SnapshotInfo;
import dev.berth.engine.api.WorkspaceState;
import dev.berth.engine.spi.MetaFile;
import dev.berth.engine.spi.Resources;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import tools.jackson.databind.json.JsonMapper;

/**
 * On-disk layout of the engine's home and the persisted records in it. Thread-safe (stateless apart from paths).
 *
 * <pre>
 * home/workspaces/ID/workspace.meta   WorkspaceRecord (MetaFile, kind "workspace", version 5; 5 added processes, 4 image, 3 damage, 2 secrets)
 * home/workspaces/ID/state/           driver-owned persistent state (disk layers, parked memory)
 * home/snapshots/ID/snapshot.meta     SnapshotRecord (MetaFile, kind "snapshot", version 2; 2 added image)
 * home/snapshots/ID/state/            driver-owned snapshot state
 * home/run/ID/                        driver-owned runtime files; wiped at start-up
 * </pre>
 */
public final class Store {
    /**
     * 5 added {@code processes}, 4 {@code image}, 3 {@code damage}, 2 {@code secrets}; 1 to 4 are still read (no
     * background process to re-attach; 1 to 3 on the built-in image).
     */
    static final int WORKSPACE_VERSION = 5;
    /** Version 1 records lack {@code secrets}; they read as a workspace without secret bindings. */
    static final int OLDEST_WORKSPACE_VERSION = 1;
    /** 2 added {@code image}; 1 is still read (a snapshot of a workspace on the built-in image). */
    static final int SNAPSHOT_VERSION = 2;
    static final int OLDEST_SNAPSHOT_VERSION = 1;
    private static final JsonMapper JSON = JsonMapper.builder().build();

    /** Persisted fields of a workspace. {@code state} is only ever "running" or "parked" on disk. */
    public record WorkspaceRecord(String id, String tenant, String name, String lifecycle, String isolation, String state,
                           String createdAt, String lastUsedAt, String fromSnapshot, Resources resources,
                           List<String> egress, List<String> secrets, String damage, ImageRef image,
                           List<ProcessRecord> processes) {}

    /**
     * A background process the workspace's agent may still run: {@code run} is its agent run name (protocol ATTACH),
     * {@code egress} its run's egress narrowing as asked for (null: none).
     */
    public record ProcessRecord(String id, String command, String run, int pid, String startedAt, List<String> egress) {}

    /** Persisted fields of a snapshot. */
    /** {@code parent}: the snapshot the workspace was forked from, if any (its state may build on the parent's). */
    public record SnapshotRecord(String id, String tenant, String name, String workspaceId, String isolation, boolean memoryKept,
                          long stateBytes, String createdAt, String parent, ImageRef image) {
        public SnapshotInfo info() {
            return new SnapshotInfo(id, name, workspaceId, isolation, memoryKept, stateBytes, Instant.parse(createdAt), List.of());
        }
    }

    public final Path home;
    public final Path workspaces;
    public final Path snapshots;
    public final Path run;

    public Store(Path home) throws IOException {
        this.home = home.toAbsolutePath();
        this.workspaces = this.home.resolve("workspaces");
        this.snapshots = this.home.resolve("snapshots");
        this.run = this.home.resolve("run");
        for (Path p : List.of(workspaces, snapshots, run)) Files.createDirectories(p);
        // Sandboxes run as their own unprivileged uids and must reach their own layer (bind sources) through these
        // directories: traversable by anyone, listable by the owner only. Snapshots are never bound into a sandbox.
        traverseOnly(this.home);
        traverseOnly(workspaces);
        traverseOnly(run);
        Files.setPosixFilePermissions(snapshots, java.nio.file.attribute.PosixFilePermissions.fromString("rwx------"));
    }

    public static void traverseOnly(Path dir) throws IOException {
        Files.setPosixFilePermissions(dir, java.nio.file.attribute.PosixFilePermissions.fromString("rwx--x--x"));
    }

    public Path workspaceDir(String id) { return workspaces.resolve(id); }
    public Path runtimeDir(String id) { return run.resolve(id); }
    public Path snapshotDir(String id) { return snapshots.resolve(id); }

    public void save(Workspace ws) throws IOException {
        // one writer per workspace at a time: MetaFile.write goes through one temporary file
        synchronized (ws) {
            saveLocked(ws);
        }
    }

    private void saveLocked(Workspace ws) throws IOException {
        String persisted = ws.state() == WorkspaceState.PARKED ? "parked" : ws.state() == WorkspaceState.DAMAGED ? "damaged" : "running";
        var rec = new WorkspaceRecord(ws.id, ws.tenant, ws.name, ws.lifecycle.wireName(), ws.driver.name(), persisted,
                ws.createdAt.toString(), ws.lastUsedAt().toString(), ws.fromSnapshot, ws.resources, ws.egressRequest,
                ws.secrets.isEmpty() ? null : ws.secrets, ws.state() == WorkspaceState.DAMAGED ? ws.recovered() : null, ws.image(),
                ws.processRecords());
        MetaFile.write(ws.dir.resolve("workspace.meta"), "workspace", WORKSPACE_VERSION, JSON.writeValueAsString(rec));
    }

    public WorkspaceRecord loadWorkspace(Path dir) throws IOException {
        return JSON.readValue(MetaFile.read(dir.resolve("workspace.meta"), "workspace", OLDEST_WORKSPACE_VERSION, WORKSPACE_VERSION),
                WorkspaceRecord.class);
    }

    public void save(Path snapshotDir, SnapshotRecord rec) throws IOException {
        MetaFile.write(snapshotDir.resolve("snapshot.meta"), "snapshot", SNAPSHOT_VERSION, JSON.writeValueAsString(rec));
    }

    public SnapshotRecord loadSnapshot(Path dir) throws IOException {
        return JSON.readValue(MetaFile.read(dir.resolve("snapshot.meta"), "snapshot", OLDEST_SNAPSHOT_VERSION, SNAPSHOT_VERSION),
                SnapshotRecord.class);
    }

    public static List<Path> children(Path dir) throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return new ArrayList<>(s.filter(p -> !p.getFileName().toString().startsWith(".")).sorted().toList());
        }
    }

    public static void deleteTree(Path root) throws IOException { dev.berth.engine.spi.Trees.delete(root); }

    public static long treeBytes(Path root) { return dev.berth.engine.spi.Trees.bytes(root); }

    /** Deletes a tree, logging (not throwing) what could not be deleted: for clean-up after a failure. */
    public static void deleteQuietly(Path p) {
        try {
            deleteTree(p);
        } catch (IOException e) {
            System.getLogger("berth.engine").log(System.Logger.Level.WARNING, "could not delete " + p + ": " + e.getMessage());
        }
    }
}
