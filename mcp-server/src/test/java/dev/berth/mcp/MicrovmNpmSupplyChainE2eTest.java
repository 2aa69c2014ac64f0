package dev.berth.mcp;

/** npm supply-chain rules end to end in a QEMU microVM (TCG here) on the host-packages image: the same real clients inside the guest. */
class MicrovmNpmSupplyChainE2eTest extends AbstractNpmSupplyChainE2eTest {
    @Override
    ToolsImage level() { return ToolsImage.MICROVM; }
}
