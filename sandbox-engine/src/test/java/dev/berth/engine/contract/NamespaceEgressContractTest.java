package dev.berth.engine.contract;

/** The egress contract on the namespace level. */
class NamespaceEgressContractTest extends AbstractEgressContractTest {
    @Override
    protected Level level() {
        return Level.NAMESPACE;
    }
}
