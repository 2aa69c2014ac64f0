package dev.berth.engine.contract;

/** The exposed-ports contract on the gVisor level. */
class GvisorPortsContractTest extends AbstractPortsContractTest {
    @Override
    protected Level level() {
        return Level.GVISOR;
    }
}
