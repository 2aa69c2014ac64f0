package dev.berth.mcp;

/** Git end to end on the namespace level (the host's own clients). */
class NamespaceGitE2eTest extends AbstractGitE2eTest {
    @Override
    ToolsImage level() { return ToolsImage.NAMESPACE; }
}
