package dev.berth.engine.contract;

/** The egress contract on the gVisor level. */
class GvisorEgressContractTest extends AbstractEgressContractTest {
    @Override
    protected Level level() {
        return Level.GVISOR;
    }
}
