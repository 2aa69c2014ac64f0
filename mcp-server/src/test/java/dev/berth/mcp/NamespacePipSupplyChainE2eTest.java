package dev.berth.mcp;

/** pip supply-chain rules end to end on the namespace level (the host's own clients). */
class NamespacePipSupplyChainE2eTest extends AbstractPipSupplyChainE2eTest {
    @Override
    ToolsImage level() { return ToolsImage.NAMESPACE; }
}
