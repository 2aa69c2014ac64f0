package dev.berth.engine.contract;

/** The secrets contract on the namespace level. */
class NamespaceSecretsContractTest extends AbstractSecretsContractTest {
    @Override
    protected Level level() {
        return Level.NAMESPACE;
    }
}
