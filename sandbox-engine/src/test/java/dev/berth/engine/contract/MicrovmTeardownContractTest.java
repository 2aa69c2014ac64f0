package dev.berth.engine.contract;

/** Leak-free teardown on the microVM (test image) level: 30 cycles. */
class MicrovmTeardownContractTest extends AbstractTeardownContractTest {
    @Override
    protected Level level() {
        return Level.MICROVM;
    }

    @Override
    protected int cycles() {
        return 30;
    }
}
