package dev.berth.engine.microvm;

import dev.berth.engine.spi.SandboxDamagedException;
import dev.berth.engine.spi.SandboxException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Writes snapshot directories: {@code snapshot.json} naming the device state, the RAM and the top disk layer, with
 * every disk layer below it hard-linked (no disk byte is copied). Used by a live snapshot ({@link MicrovmSandbox})
 * and by a snapshot of a parked workspace ({@link #ofParked}). Stateless; thread-safe.
 */
final class SnapshotWriter {

    private SnapshotWriter() {}

    /**
     * A snapshot of a parked workspace: its saved device state and its own overlay copied (the workspace writes the
     * overlay again when it resumes), the layers below linked. Waits for the parked QEMU's exit and hole punching
     * first, and refuses a parked state that fails verification (it would hand the damage to every fork).
     */
    static void ofParked(VmHome home, Path workspaceStateDir, Path snapshotStateDir) throws SandboxException {
        try {
            home.tasks().awaitExit(workspaceStateDir);
            VmSpec spec = VmSpec.read(workspaceStateDir.resolve(VmSpec.WORKSPACE_FILE));
            if (spec.memShared()) home.tasks().awaitHoles(workspaceStateDir.resolve(spec.memPath()));
            // a snapshot of a damaged parked state would hand the damage to every fork
            if (ParkManifest.exists(workspaceStateDir)) ParkManifest.verify(home.tasks(), null, workspaceStateDir);
            if (spec.stateFile() == null || !Files.isRegularFile(workspaceStateDir.resolve(spec.stateFile())))
                throw new IOException("the workspace has no saved memory state (it was not parked cleanly)");
            Files.createDirectories(snapshotStateDir);
            copySparse(workspaceStateDir.resolve(spec.stateFile()), snapshotStateDir.resolve("state"));
            // the parked machine's own overlay is copied as the snapshot's top layer (the workspace writes it again
            // when it resumes); the layers below it are linked, not copied
            String top = DiskLayers.newId("d-") + ".qcow2";
            Path wsLayers = DiskLayers.ensureDir(workspaceStateDir);
            copySparse(workspaceStateDir.resolve(QemuMachine.DATA_DISK), wsLayers.resolve(top));
            DiskLayers.seal(wsLayers.resolve(top), home.settings().jailed());
            try {
                write(spec, workspaceStateDir, snapshotStateDir, top);
            } finally {
                Files.deleteIfExists(wsLayers.resolve(top)); // the workspace's disk does not build on this copy
            }
        } catch (SandboxDamagedException e) {
            throw new SandboxException("microvm: the parked workspace's saved state failed verification, so no snapshot"
                    + " was taken of it: " + e.getMessage(), e);
        } catch (IOException e) {
            throw new SandboxException("microvm: snapshot of parked workspace failed: " + e.getMessage(), e);
        }
    }

    /**
     * Fills {@code snapDir} from the workspace's {@code layers/}: hard links of the disk layer {@code topLayer} and of
     * every layer below it (no disk byte is copied), the RAM (copied, sparse, when the workspace owns it; linked
     * when it is a fork's read-only RAM layer), and writes snapshot.json last.
     */
    static void write(VmSpec spec, Path stateDir, Path snapDir, String topLayer) throws IOException {
        write(spec, stateDir, snapDir, topLayer, null, new Phases());
    }

    /**
     * As above; {@code copiedRam}, when not null, names the copy of the workspace's own RAM file that the caller
     * already made in {@code snapDir} (a live snapshot copies it beside the device-state save).
     */
    static void write(VmSpec spec, Path stateDir, Path snapDir, String topLayer, String copiedRam, Phases phases)
            throws IOException {
        Path layers = DiskLayers.ensureDir(snapDir);
        Path top = stateDir.resolve(DiskLayers.DIR).resolve(topLayer);
        DiskLayers.link(top, layers.resolve(topLayer));
        for (Path below : DiskLayers.chain(top)) {
            String name = below.getFileName().toString();
            // a layer; a chain of a fork made before layers goes on through the old snapshot's absolute path
            if (name.startsWith("d-") && !Files.exists(layers.resolve(name))) DiskLayers.link(below, layers.resolve(name));
        }
        String memPath;
        phases.mark("link the disk layers");
        if (spec.memShared() && copiedRam != null) {
            memPath = copiedRam;
        } else if (spec.memShared()) {
            memPath = DiskLayers.DIR + "/" + DiskLayers.newId("r-") + ".ram";
            copySparse(stateDir.resolve(spec.memPath()), snapDir.resolve(memPath));
            phases.mark("copy the RAM file");
        } else if (!Path.of(spec.memPath()).isAbsolute()) {
            memPath = spec.memPath();
            DiskLayers.link(stateDir.resolve(memPath), snapDir.resolve(memPath));
        } else {
            memPath = spec.memPath(); // a fork made before layers maps its snapshot's RAM by absolute path
        }
        VmSpec.fsync(layers);
        spec.withMemory(memPath, false).withState("state").withDisk(DiskLayers.DIR + "/" + topLayer)
                .write(snapDir.resolve(VmSpec.SNAPSHOT_FILE));
        phases.mark("fsync, snapshot.json");
    }

    static void copySparse(Path from, Path to) throws IOException {
        ImageBuilder.run(List.of("cp", "--sparse=always", from.toString(), to.toString()), 600);
    }

    /** Bytes the files really occupy on disk (sparse files count only their allocated blocks). */
    static long allocatedBytes(List<Path> files) {
        List<String> cmd = new ArrayList<>(List.of("du", "-B1", "-c"));
        for (Path f : files) if (Files.exists(f)) cmd.add(f.toString());
        if (cmd.size() == 3) return 0;
        try {
            String out = ImageBuilder.run(cmd, 30).strip();
            String last = out.substring(out.lastIndexOf('\n') + 1);
            return Long.parseLong(last.split("\\s+")[0]);
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }
}
