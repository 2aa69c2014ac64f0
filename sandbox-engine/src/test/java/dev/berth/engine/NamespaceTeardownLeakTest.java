package dev.berth.engine;

import dev.berth.engine.namespace.NamespaceDriver;
import dev.berth.engine.spi.IsolationDriver;
import java.nio.file.Path;

/** Leak-free teardown on the namespace driver: 300 cycles. */
class NamespaceTeardownLeakTest extends AbstractTeardownLeakTest {
    @Override protected IsolationDriver driver(Path home) { return new NamespaceDriver(home); }
    @Override protected int cycles() { return 300; }
}
