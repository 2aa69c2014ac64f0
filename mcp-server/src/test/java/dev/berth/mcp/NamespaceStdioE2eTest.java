package dev.berth.mcp;

/** The end-to-end suite on the bubblewrap namespace driver. */
class NamespaceStdioE2eTest extends AbstractStdioE2eTest {
    @Override
    String isolation() { return "namespace"; }
}
