package dev.berth.engine.microvm;

import dev.berth.engine.AbstractImageWorkspaceTest;
import dev.berth.engine.spi.IsolationDriver;
import java.nio.file.Path;

/** The image cases on QEMU microVMs: the image's ext4 base under the guest's copy-on-write overlay. */
class MicrovmImageWorkspaceTest extends AbstractImageWorkspaceTest {
    @Override
    protected IsolationDriver driver(Path home) {
        return new MicrovmDriver(TestImages.builder(), MicrovmDriver.ImageKind.TEST);
    }
}
