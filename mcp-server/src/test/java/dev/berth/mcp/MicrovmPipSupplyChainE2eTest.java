package dev.berth.mcp;

/** pip supply-chain rules end to end in a QEMU microVM (TCG here) on the host-packages image: the same real clients inside the guest. */
class MicrovmPipSupplyChainE2eTest extends AbstractPipSupplyChainE2eTest {
    @Override
    ToolsImage level() { return ToolsImage.MICROVM; }
}
