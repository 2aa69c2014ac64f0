package dev.berth.mcp;

/** {@code npm ci} from the machine's real npm registry through the proxy, on the namespace level (the host's npm). */
class NamespaceRealRegistryNpmE2eTest extends AbstractRealRegistryNpmE2eTest {
    @Override
    ToolsImage level() { return ToolsImage.NAMESPACE; }
}
