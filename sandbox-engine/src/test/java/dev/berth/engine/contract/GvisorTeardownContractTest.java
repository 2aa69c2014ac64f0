package dev.berth.engine.contract;

/** Leak-free teardown on the gVisor level: 30 cycles. */
class GvisorTeardownContractTest extends AbstractTeardownContractTest {
    @Override
    protected Level level() {
        return Level.GVISOR;
    }

    @Override
    protected int cycles() {
        return 30;
    }
}
