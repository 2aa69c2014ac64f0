package dev.berth.engine.namespace;

import dev.berth.engine.AbstractTransferTest;
import dev.berth.engine.spi.IsolationDriver;
import java.nio.file.Path;

/** Directory in, work out, on bubblewrap namespaces (the host's /usr: git and tar are there). */
class NamespaceTransferTest extends AbstractTransferTest {
    @Override
    protected IsolationDriver driver(Path home) { return new NamespaceDriver(home); }
}
