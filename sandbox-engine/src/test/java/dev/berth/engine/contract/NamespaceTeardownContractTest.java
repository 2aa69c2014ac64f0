package dev.berth.engine.contract;

/** Leak-free teardown on the namespace level: 100 cycles (a per-cycle leak shows after one; 100 in flight four at a time also
 * cover the races of concurrent opens and closes). */
class NamespaceTeardownContractTest extends AbstractTeardownContractTest {
    @Override
    protected Level level() {
        return Level.NAMESPACE;
    }

    @Override
    protected int cycles() {
        return 100;
    }
}
