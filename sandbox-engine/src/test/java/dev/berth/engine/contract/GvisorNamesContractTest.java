package dev.berth.engine.contract;

/** The names contract on the gVisor level. */
class GvisorNamesContractTest extends AbstractNamesContractTest {
    @Override
    protected Level level() {
        return Level.GVISOR;
    }
}
