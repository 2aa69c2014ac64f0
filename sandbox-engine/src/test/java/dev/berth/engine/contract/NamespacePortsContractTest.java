package dev.berth.engine.contract;

/** The exposed-ports contract on the namespace level. */
class NamespacePortsContractTest extends AbstractPortsContractTest {
    @Override
    protected Level level() {
        return Level.NAMESPACE;
    }
}
