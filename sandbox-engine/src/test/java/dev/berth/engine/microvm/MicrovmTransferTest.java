package dev.berth.engine.microvm;

import dev.berth.engine.AbstractTransferTest;
import dev.berth.engine.contract.Level;
import dev.berth.engine.spi.IsolationDriver;
import java.nio.file.Path;

/**
 * Directory in on the microVM level's test image: busybox tar unpacks the stream; the image has no git, so the
 * export cases are skipped (the developer image has git) and the import says so in its notes.
 */
class MicrovmTransferTest extends AbstractTransferTest {
    @Override
    protected IsolationDriver driver(Path home) { return Level.MICROVM.driver(home); }

    @Override
    protected boolean guestHasGit() { return false; }
}
