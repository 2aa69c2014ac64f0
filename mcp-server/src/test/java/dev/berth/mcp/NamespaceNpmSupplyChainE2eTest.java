package dev.berth.mcp;

/** npm supply-chain rules end to end on the namespace level (the host's own clients). */
class NamespaceNpmSupplyChainE2eTest extends AbstractNpmSupplyChainE2eTest {
    @Override
    ToolsImage level() { return ToolsImage.NAMESPACE; }
}
