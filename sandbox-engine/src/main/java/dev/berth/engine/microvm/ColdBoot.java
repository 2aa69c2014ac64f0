package dev.berth.engine.microvm;

import dev.berth.engine.spi.Resources;
import dev.berth.engine.spi.Sandbox;
import dev.berth.engine.spi.StartRequest;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * Start modes that boot a guest kernel: a fresh workspace on a new data disk ({@link #boot}), and a damaged
 * workspace's disk booted read-only for inspection ({@link #inspect}). Thread-safe.
 */
final class ColdBoot {
    static final int MIN_MEMORY_MIB = 96;

    private final StartContext ctx;

    ColdBoot(StartContext ctx) { this.ctx = ctx; }

    /** A new machine booted from the image's kernel on a fresh, empty data disk. */
    Sandbox boot(StartRequest req) throws IOException {
        Resources r = req.resources();
        if (r.memoryMiB() < MIN_MEMORY_MIB) throw new IOException("memory " + r.memoryMiB() + " MiB is below the minimum of " + MIN_MEMORY_MIB + " MiB");
        if (r.vcpus() < 1 || r.vcpus() > 64) throw new IOException("vcpus must be 1..64, not " + r.vcpus());
        if (r.diskMiB() < 16) throw new IOException("disk must be at least 16 MiB, not " + r.diskMiB());
        GuestImage img = ctx.images().imageFor(req);
        var runAs = req.image() == null ? null : req.image().runAs();
        VmSpec spec = new VmSpec(img.id(), img.kernel().toString(), img.initramfs().toString(),
                img.baseDisk() == null ? null : img.baseDisk().toString(), r.memoryMiB(), r.vcpus(),
                "ram", true, null, req.proxyPort(), null,
                runAs == null ? null : Integer.toUnsignedString(runAs.uid()) + ":" + Integer.toUnsignedString(runAs.gid()));
        Path disk = req.stateDir().resolve(QemuMachine.DATA_DISK);
        createDataDisk(disk, r.diskMiB());
        spec.write(req.stateDir().resolve(VmSpec.WORKSPACE_FILE));
        QemuMachine m = ctx.launch(spec, req.stateDir(), disk, req.runtimeDir(), null);
        return ctx.guest().connect(req, spec, m, false, false);
    }

    /**
     * A damaged workspace's disk, booted cold and read-only: a throwaway qcow2 overlay in the runtime directory on
     * top of the workspace's disk (which QEMU, jailed, sees read-only as its backing file), fresh memory there too,
     * and nothing written into the state directory: whatever failed verification (saved RAM, device state) is left
     * as it is for the operator. What only the saved memory held is not there; what the guest had written to its
     * disk is. The sandbox is destroyed after use.
     */
    Sandbox inspect(StartRequest req) throws IOException {
        ctx.home().tasks().awaitExit(req.stateDir());
        Path specFile = req.stateDir().resolve(VmSpec.WORKSPACE_FILE);
        Path disk = req.stateDir().resolve(QemuMachine.DATA_DISK);
        if (!Files.isRegularFile(specFile) || !Files.isRegularFile(disk)) {
            throw new IOException("the workspace has no machine description or disk left in " + req.stateDir() + " to read");
        }
        Path dir = req.runtimeDir().resolve("inspect");
        StartContext.clearDir(dir);
        Files.createDirectories(dir);
        VmSpec spec = VmSpec.read(specFile).withMemory("ram", true).withState(null);
        Path overlay = dir.resolve(QemuMachine.DATA_DISK);
        ImageBuilder.run(List.of("qemu-img", "create", "-q", "-f", "qcow2", "-F", "qcow2", "-b",
                disk.toAbsolutePath().toString(), overlay.toString()), 60);
        QemuMachine m = ctx.launch(spec, dir, overlay, req.runtimeDir(), null);
        StartRequest view = new StartRequest(req.workspaceId(), dir, req.runtimeDir(), req.mode(), req.resources(), req.proxyPort(),
                req.image());
        return ctx.guest().connect(view, spec, m, false, false);
    }

    /** A sparse qcow2 holding a fresh ext4 filesystem of {@code mib} MiB (made on the host, never by the guest). */
    static void createDataDisk(Path disk, int mib) throws IOException {
        Path raw = disk.resolveSibling(disk.getFileName() + ".raw");
        try {
            ImageBuilder.run(List.of("truncate", "-s", mib + "M", raw.toString()), 30);
            ImageBuilder.run(List.of("mkfs.ext4", "-q", "-F", "-L", "berth-data", "-E",
                    "lazy_itable_init=1,lazy_journal_init=1,root_owner=0:0", raw.toString()), 60);
            ImageBuilder.run(List.of("qemu-img", "convert", "-q", "-f", "raw", "-O", "qcow2", raw.toString(), disk.toString()), 120);
        } finally {
            Files.deleteIfExists(raw);
        }
    }
}
