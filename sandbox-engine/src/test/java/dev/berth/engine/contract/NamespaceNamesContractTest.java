package dev.berth.engine.contract;

/** The names contract on the namespace level. */
class NamespaceNamesContractTest extends AbstractNamesContractTest {
    @Override
    protected Level level() {
        return Level.NAMESPACE;
    }
}
