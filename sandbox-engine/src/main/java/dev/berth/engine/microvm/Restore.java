package dev.berth.engine.microvm;

import dev.berth.engine.spi.Sandbox;
import dev.berth.engine.spi.SandboxDamagedException;
import dev.berth.engine.spi.StartRequest;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/**
 * The resume of a parked workspace: its machine restored from the state park saved (checked against the park's
 * manifest while QEMU starts), or booted cold on its own disk when no state was saved. Thread-safe.
 */
final class Restore {
    private final StartContext ctx;

    Restore(StartContext ctx) { this.ctx = ctx; }

    Sandbox start(StartRequest req) throws IOException, SandboxDamagedException {
        Phases phases = new Phases();
        BackgroundTasks tasks = ctx.home().tasks();
        tasks.awaitExit(req.stateDir());
        Path specFile = req.stateDir().resolve(VmSpec.WORKSPACE_FILE);
        if (!Files.exists(specFile)) throw new IOException("no saved machine in " + req.stateDir());
        VmSpec spec = VmSpec.read(specFile);
        Path disk = req.stateDir().resolve(QemuMachine.DATA_DISK);
        // a snapshot the server died in: drop the overlay QEMU had not switched to, and links nothing uses
        DiskLayers.recover(req.stateDir(), null);
        DiskLayers.prune(req.stateDir(), spec, disk);
        phases.mark("spec and layers");
        Path state = spec.stateFile() == null ? null : req.stateDir().resolve(spec.stateFile());
        if (spec.memShared()) tasks.stopHoles(req.stateDir().resolve(spec.memPath()));
        phases.mark("stop hole punching");
        CompletableFuture<Void> verified = CompletableFuture.completedFuture(null);
        if (state != null && (ParkManifest.exists(req.stateDir()) || VmSpec.promisesManifest(specFile))) {
            // load exactly what park wrote, or nothing: a missing, truncated or foreign file is refused by name. The
            // check runs while QEMU starts, and QEMU loads nothing before it passed.
            verified = CompletableFuture.runAsync(() -> {
                try {
                    ParkManifest.verify(tasks, req.workspaceId(), req.stateDir());
                } catch (SandboxDamagedException | IOException e) {
                    throw new CompletionException(e);
                }
            }, tasks.waits); // its own thread: the common pool has one worker on two cores
        } else if (state != null && !Files.isRegularFile(state)) {
            throw new SandboxDamagedException("vm.json names the saved state " + spec.stateFile() + ", which is missing");
        }
        CompletableFuture<Void> check = verified;
        // No saved state (the server or QEMU died while it ran): boot cold on the workspace's own disk.
        QemuMachine m;
        try {
            m = QemuMachine.launch(ctx.settings(), ctx.accel().get(), spec, req.stateDir(), disk, req.runtimeDir(), state, () -> {
                try {
                    check.join();
                } catch (CompletionException e) {
                    throw new IOException(e.getCause().getMessage(), e.getCause());
                }
            }, phases);
        } catch (IOException e) {
            for (Throwable t = e; t != null; t = t.getCause()) {
                if (t instanceof SandboxDamagedException d) throw d;
            }
            check.exceptionally(x -> null).join(); // QEMU failed for its own reasons: let the check finish first
            throw e;
        }
        VmSpec running = spec;
        if (state != null) {
            // Until cont the RAM file is untouched and a failed resume can be retried. From cont on the RAM file is
            // live and the saved device state no longer matches it: forget the state first (a later failure then
            // resumes as a cold boot on the disk, never as a restore onto changed RAM).
            running = spec.withState(null);
            running.write(specFile);
            Files.deleteIfExists(state);
            Files.deleteIfExists(req.stateDir().resolve(ParkManifest.FILE));
            phases.mark("forget the saved state");
            m.cont();
            phases.mark("cont");
        }
        MicrovmSandbox sb = ctx.guest().connect(req, running, m, state != null, false, phases);
        DiskLayers.flattenIfDeep(m, req.stateDir(), ctx.settings().maxChainDepth());
        phases.mark("chain depth check");
        sb.startPhases = phases.millis();
        return sb;
    }
}
