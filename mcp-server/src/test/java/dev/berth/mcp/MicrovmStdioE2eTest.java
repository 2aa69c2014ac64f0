package dev.berth.mcp;

/**
 * The end-to-end suite on the QEMU microvm driver (TCG on machines without usable KVM), with the small test image
 * (busybox userland) so it runs the same on a fresh machine as on one where `berth setup` built the developer image.
 */
class MicrovmStdioE2eTest extends AbstractStdioE2eTest {
    @Override
    String isolation() { return "microvm"; }

    @Override
    String[] serverArgs() { return new String[] {"--isolation", "microvm", "--microvm-image", "test"}; }
}
