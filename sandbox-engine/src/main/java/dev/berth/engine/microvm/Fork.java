package dev.berth.engine.microvm;

import dev.berth.engine.spi.StartRequest;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;

/**
 * A new machine from a snapshot: a qcow2 overlay on the snapshot's top disk layer, and its RAM either mapped
 * copy-on-write (share=off: a fork costs no copy, but its park must write every page it changed into the state
 * stream) or, with {@code ownMemory}, copied (sparse) into the workspace so that it is the workspace's own share=on
 * file like a booted machine's: park and resume then move only device state. Fresh workspaces made from the warm
 * base own their memory (they must park like a booted machine); forks of a user's snapshot share it.
 *
 * <p>A fork first hard-links every layer of the snapshot (disk chain, RAM, device state) into its own
 * {@code layers/} directory ({@link DiskLayers}): from then on it needs nothing under the snapshot's name, so the
 * snapshot may be deleted at any time, during this start too (the start then fails cleanly before its links are
 * complete, or succeeds on its own links). Thread-safe.
 */
final class Fork {
    private static final System.Logger LOG = System.getLogger("berth.microvm");

    private final StartContext ctx;

    Fork(StartContext ctx) { this.ctx = ctx; }

    MicrovmSandbox start(StartRequest req, Path snapDir, boolean ownMemory) throws IOException {
        Phases phases = new Phases();
        VmSpec snap = VmSpec.read(snapDir.resolve(VmSpec.SNAPSHOT_FILE));
        Path snapDisk = snapDir.resolve(snap.disk() == null ? QemuMachine.DATA_DISK : snap.disk()).toAbsolutePath();
        // only a snapshot of a machine whose RAM was its own file has a stream without RAM pages: then its RAM file
        // can become the fork's own
        boolean own = ownMemory && !Path.of(snap.memPath()).isAbsolute() && DiskLayers.chain(snapDisk).isEmpty();
        Path disk = req.stateDir().resolve(QemuMachine.DATA_DISK);
        Path layers = DiskLayers.ensureDir(req.stateDir());
        // the device state under a name of the fork's own (a read-only layer until the restore has read it)
        Path state = layers.resolve(DiskLayers.newId("s-") + ".state");
        DiskLayers.link(snapDir.resolve(snap.stateFile()), state);
        VmSpec spec;
        if (own) {
            SnapshotWriter.copySparse(snapDir.resolve(snap.memPath()), req.stateDir().resolve("ram"));
            spec = snap.withMemory("ram", true).withState(null).withDisk(null);
            // the workspace's own disk too (a warm base's is a few MiB, copied sparse), so nothing refers to the base
            SnapshotWriter.copySparse(snapDisk, disk);
            // layers are read-only and copies keep the mode: the workspace's own files must be writable by its QEMU
            for (Path f : List.of(disk, req.stateDir().resolve("ram")))
                Files.setPosixFilePermissions(f, PosixFilePermissions.fromString("rw-r--r--"));
            ctx.home().tasks().writeBackLater(req.stateDir().resolve("ram"));
        } else {
            String top;
            String mem = snap.memPath();
            if (snap.disk() != null) {
                DiskLayers.linkAll(snapDir, req.stateDir());
                top = snap.disk();
            } else {
                // a snapshot written before layers: its disk and RAM become layers of the fork
                top = DiskLayers.DIR + "/" + DiskLayers.newId("d-") + ".qcow2";
                DiskLayers.link(snapDisk, req.stateDir().resolve(top));
                if (!Path.of(mem).isAbsolute()) {
                    String ram = DiskLayers.DIR + "/" + DiskLayers.newId("r-") + ".ram";
                    DiskLayers.link(snapDir.resolve(mem), req.stateDir().resolve(ram));
                    mem = ram;
                }
            }
            ctx.home().overlays().create(disk, top, DiskLayers.virtualSize(req.stateDir().resolve(top)));
            spec = snap.withMemory(mem, false).withState(null).withDisk(null);
        }
        spec.write(req.stateDir().resolve(VmSpec.WORKSPACE_FILE));
        phases.mark(own ? "copy RAM and disk" : "link layers, overlay");
        QemuMachine m = ctx.launch(spec, req.stateDir(), disk, req.runtimeDir(), state);
        phases.mark("launch QEMU, restore device state");
        Files.deleteIfExists(state);
        m.cont();
        phases.mark("cont");
        MicrovmSandbox sb = ctx.guest().connect(req, spec, m, true, true, phases);
        if (!own) DiskLayers.flattenIfDeep(m, req.stateDir(), ctx.settings().maxChainDepth());
        sb.startPhases = phases.millis();
        LOG.log(System.Logger.Level.DEBUG, () -> "microvm " + req.workspaceId() + ": fork phases (ms) " + sb.startPhases);
        return sb;
    }
}
