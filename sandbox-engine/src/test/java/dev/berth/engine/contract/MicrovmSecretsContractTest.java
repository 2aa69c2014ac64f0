package dev.berth.engine.contract;

/** The secrets contract on the microVM (test image) level. */
class MicrovmSecretsContractTest extends AbstractSecretsContractTest {
    @Override
    protected Level level() {
        return Level.MICROVM;
    }
}
