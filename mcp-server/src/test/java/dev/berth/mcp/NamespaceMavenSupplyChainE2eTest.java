package dev.berth.mcp;

/** Maven supply-chain rules end to end on the namespace level: the host's Maven on the JDK running this test. */
class NamespaceMavenSupplyChainE2eTest extends AbstractMavenSupplyChainE2eTest {
    @Override
    ToolsImage level() { return ToolsImage.NAMESPACE; }

    /** The host's JDK (a namespace workspace sees the host's /usr, not its /etc, which Debian's JDK 17 needs). */
    @Override
    String javaHome() { return System.getProperty("java.home"); }

    @Override
    String javaOpts() { return "--sun-misc-unsafe-memory-access=allow"; }
}
