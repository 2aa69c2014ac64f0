package dev.berth.engine.contract;

/** The egress contract on the microVM level (test image). */
class MicrovmEgressContractTest extends AbstractEgressContractTest {
    @Override
    protected Level level() {
        return Level.MICROVM;
    }
}
