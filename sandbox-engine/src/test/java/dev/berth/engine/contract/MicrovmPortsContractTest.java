package dev.berth.engine.contract;

/** The exposed-ports contract on the microVM (test image) level. */
class MicrovmPortsContractTest extends AbstractPortsContractTest {
    @Override
    protected Level level() {
        return Level.MICROVM;
    }
}
