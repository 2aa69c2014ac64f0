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

    /**
     * Guest boots under TCG are CPU-bound. Measured on a loaded 2-core machine, the 30 open/run/close cycles took
     * 62 s one at a time, 140 s four at a time and 40 s two at a time.
     */
    @Override
    protected int parallel() {
        return 2;
    }
}
