package dev.berth.engine.contract;

/** The names contract on the microVM (test image) level. */
class MicrovmNamesContractTest extends AbstractNamesContractTest {
    @Override
    protected Level level() {
        return Level.MICROVM;
    }
}
