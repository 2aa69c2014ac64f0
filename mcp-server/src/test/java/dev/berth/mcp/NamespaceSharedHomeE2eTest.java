package dev.berth.mcp;

/** One home, many clients, on the namespace driver. */
class NamespaceSharedHomeE2eTest extends AbstractSharedHomeE2eTest {
    @Override String[] serverArgs() { return new String[] {"--isolation", "namespace"}; }
    @Override boolean keepsProcesses() { return false; }
}
