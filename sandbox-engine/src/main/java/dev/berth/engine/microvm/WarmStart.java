package dev.berth.engine.microvm;

import dev.berth.engine.spi.Sandbox;
import dev.berth.engine.spi.SandboxException;
import dev.berth.engine.spi.StartRequest;
import dev.berth.engine.spi.Trees;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * The fresh-workspace start: a fork of a pristine "base" snapshot of the same image and shape, taken right after the
 * first boot and kept in the image cache, so that open_workspace costs a restore (~0.2-0.3 s under TCG) instead of a
 * boot (~3-6 s). The fork path sets the clock and reseeds the guest RNG, so workspaces made from one base share no
 * randomness. Off with {@link MicrovmSettings#warmBase()} ({@code -Dberth.microvm.warmBase=false}): every fresh
 * workspace boots. Thread-safe.
 */
final class WarmStart {
    private static final System.Logger LOG = System.getLogger("berth.microvm");

    private final StartContext ctx;
    private final WarmBases bases;
    private final ColdBoot boot;
    private final Fork fork;
    /** The driver's clean-up of a runtime directory after a failed start. */
    private final Consumer<Path> cleanupRuntime;

    WarmStart(StartContext ctx, WarmBases bases, ColdBoot boot, Fork fork, Consumer<Path> cleanupRuntime) {
        this.ctx = ctx;
        this.bases = bases;
        this.boot = boot;
        this.fork = fork;
        this.cleanupRuntime = cleanupRuntime;
    }

    Sandbox start(StartRequest req) throws IOException {
        if (!ctx.settings().warmBase()) return boot.boot(req);
        String imageId = ctx.images().imageFor(req).id();
        Path base = bases.of(imageId, req.resources(), req.proxyPort());
        Optional<WarmBases.Lease> lease = bases.use(base);
        if (lease.isPresent()) {
            try (WarmBases.Lease held = lease.get()) {
                return fork.start(req, base, true); // copies what it needs: the base can go once this returns
            } catch (IOException e) {
                LOG.log(System.Logger.Level.WARNING, "warm base " + base + " unusable, booting instead: " + e.getMessage());
                cleanupRuntime.accept(req.runtimeDir());
                StartContext.clearDir(req.stateDir());
                StartContext.clearDir(req.runtimeDir());
            }
        }
        Sandbox fresh = boot.boot(req);
        Path tmp = null;
        try {
            Files.createDirectories(base.getParent());
            tmp = Files.createTempDirectory(base.getParent(), ".base-");
            fresh.snapshot(tmp);
            bases.publish(tmp, base);
            tmp = null;
            // a new base is the moment an image was rebuilt or upgraded: collect what that superseded
            List<String> removed = bases.collect(imageId, Instant.now());
            if (!removed.isEmpty()) LOG.log(System.Logger.Level.INFO, "warm bases collected: " + removed);
        } catch (IOException | SandboxException | RuntimeException e) {
            // the workspace is fine without a base; the next fresh one boots too and tries again
            LOG.log(System.Logger.Level.INFO, "no warm base for " + base.getFileName() + ": " + e.getMessage());
        } finally {
            if (tmp != null) Trees.delete(tmp);
        }
        return fresh;
    }
}
