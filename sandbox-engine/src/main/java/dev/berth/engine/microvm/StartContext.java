package dev.berth.engine.microvm;

import dev.berth.engine.spi.StartRequest;
import dev.berth.engine.spi.Trees;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.Supplier;

/**
 * What every start mode ({@link ColdBoot}, {@link WarmStart}, {@link Restore}, {@link Fork}) needs from the driver:
 * the home's settings and background work, the accelerator (detected once per driver), the guest image of a request,
 * and the connection to a started guest. Immutable; thread-safe.
 */
record StartContext(VmHome home, Supplier<Accel> accel, ImageLookup images, GuestLink guest) {

    /** The guest image a start request boots (the built-in one, or an imported image on the built-in kernel). */
    @FunctionalInterface
    interface ImageLookup {
        GuestImage imageFor(StartRequest request) throws IOException;
    }

    MicrovmSettings settings() { return home.settings(); }

    /** {@link QemuMachine#launch} with this driver's settings and accelerator. */
    QemuMachine launch(VmSpec spec, Path specDir, Path dataDisk, Path runtimeDir, Path stateFile) throws IOException {
        return QemuMachine.launch(settings(), accel.get(), spec, specDir, dataDisk, runtimeDir, stateFile);
    }

    /** Empties {@code dir} (it stays); nothing when it does not exist. */
    static void clearDir(Path dir) throws IOException {
        if (!Files.isDirectory(dir)) return;
        try (var s = Files.list(dir)) {
            for (Path p : s.toList()) Trees.delete(p);
        }
    }
}
