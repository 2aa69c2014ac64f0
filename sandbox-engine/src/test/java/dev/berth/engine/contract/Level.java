package dev.berth.engine.contract;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.berth.engine.Engine;
import dev.berth.engine.api.EngineConfig;
import dev.berth.engine.api.EngineException;
import dev.berth.engine.gvisor.GvisorDriver;
import dev.berth.engine.microvm.ImageBuilder;
import dev.berth.engine.microvm.MicrovmDriver;
import dev.berth.engine.namespace.NamespaceDriver;
import dev.berth.engine.spi.IsolationDriver;
import java.nio.file.Path;
import java.util.List;
import java.util.function.UnaryOperator;

/**
 * The isolation levels every contract suite runs on, and what a case may assume about each one's userland: the
 * namespace and gVisor levels run the host's Debian tree (curl, python3, busybox), the microVM level its test image
 * (busybox only). Stateless; each call makes a new driver.
 */
public enum Level {
    NAMESPACE("namespace", true),
    GVISOR("gvisor", true),
    MICROVM("microvm", false);

    private final String isolation;
    private final boolean hostUserland;

    Level(String isolation, boolean hostUserland) {
        this.isolation = isolation;
        this.hostUserland = hostUserland;
    }

    /** The name the engine reports for this level ({@code WorkspaceInfo.isolation()}). */
    public String isolation() {
        return isolation;
    }

    /** A new driver of this level with its state under {@code home} (the microVM test image is built on first use). */
    public IsolationDriver driver(Path home) {
        return switch (this) {
            case NAMESPACE -> new NamespaceDriver(home);
            case GVISOR -> new GvisorDriver(home);
            case MICROVM -> new MicrovmDriver(new ImageBuilder(imageCache(), ImageBuilder.defaultScriptsDir()), MicrovmDriver.ImageKind.TEST);
        };
    }

    /**
     * An engine on this level's driver, configured further by {@code configure}; the calling suite is skipped, with
     * the driver's own reason, where the level cannot run on this machine.
     */
    public Engine start(Path home, UnaryOperator<EngineConfig> configure) throws EngineException {
        IsolationDriver d = driver(home);
        assumeTrue(d.probe().available(), () -> d.name() + " cannot run here: " + d.probe().reason());
        return Engine.start(configure.apply(EngineConfig.defaults(home, List.of(d))));
    }

    /** Whether runs find the host's Debian userland (curl, python3) rather than a busybox-only test image. */
    public boolean hostUserland() {
        return hostUserland;
    }

    /** Skips the rest of a case where the level's userland lacks curl or python3, saying which case needs them. */
    public void assumeHostUserland(String needs) {
        assumeTrue(hostUserland, () -> isolation + ": the test image has busybox only (no curl, no python3); this case needs " + needs);
    }

    /** Where tests keep the microVM image cache: target/berth-images unless -Dberth.images.cache says otherwise. */
    private static Path imageCache() {
        String c = System.getProperty("berth.images.cache");
        return c != null ? Path.of(c) : Path.of("target", "berth-images").toAbsolutePath();
    }
}
