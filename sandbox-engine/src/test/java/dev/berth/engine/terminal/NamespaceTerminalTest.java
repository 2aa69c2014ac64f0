package dev.berth.engine.terminal;

import dev.berth.engine.namespace.NamespaceDriver;
import dev.berth.engine.spi.IsolationDriver;
import java.nio.file.Path;

/** Terminal processes on the namespace level (bubblewrap). */
class NamespaceTerminalTest extends AbstractTerminalTest {
    @Override
    protected IsolationDriver driver(Path home) { return new NamespaceDriver(home); }
}
