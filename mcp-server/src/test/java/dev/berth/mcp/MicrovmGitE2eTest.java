package dev.berth.mcp;

/** Git end to end in a QEMU microVM (TCG here) on the host-packages image: the same real clients inside the guest. */
class MicrovmGitE2eTest extends AbstractGitE2eTest {
    @Override
    ToolsImage level() { return ToolsImage.MICROVM; }
}
