package dev.berth.engine.contract;

/** Leak-free teardown on the namespace level: 300 cycles. */
class NamespaceTeardownContractTest extends AbstractTeardownContractTest {
    @Override
    protected Level level() {
        return Level.NAMESPACE;
    }

    @Override
    protected int cycles() {
        return 300;
    }
}
