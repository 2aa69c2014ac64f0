package dev.berth.engine.contract;

/** The secrets contract on the gVisor level. */
class GvisorSecretsContractTest extends AbstractSecretsContractTest {
    @Override
    protected Level level() {
        return Level.GVISOR;
    }
}
