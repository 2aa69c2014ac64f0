package dev.berth.engine.microvm;

import dev.berth.engine.spi.IsolationDriver;
import java.nio.file.Path;

/** Leak-free teardown on the microVM driver (test image): 30 cycles. */
class MicrovmTeardownLeakTest extends dev.berth.engine.AbstractTeardownLeakTest {
    @Override protected IsolationDriver driver(Path home) { return new MicrovmDriver(TestImages.builder(), MicrovmDriver.ImageKind.TEST); }
    @Override protected int cycles() { return 30; }
}
