package dev.berth.mcp;

/** One home, many clients, on the microVM driver (test image). */
class MicrovmSharedHomeE2eTest extends AbstractSharedHomeE2eTest {
    @Override String[] serverArgs() { return new String[] {"--isolation", "microvm", "--microvm-image", "test"}; }
    @Override boolean keepsProcesses() { return true; }
}
