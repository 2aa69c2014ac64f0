package dev.berth.mcp;

/**
 * Maven supply-chain rules end to end in a QEMU microVM (TCG here) on the host-packages image with Debian's Maven and
 * JDK 17: the same real client inside the guest.
 */
class MicrovmMavenSupplyChainE2eTest extends AbstractMavenSupplyChainE2eTest {
    @Override
    ToolsImage level() { return ToolsImage.MICROVM_MAVEN; }

    @Override
    String javaHome() { return "/usr/lib/jvm/java-17-openjdk-amd64"; }

    /** Under TCG every compiled method costs: C1 only, and one GC thread. */
    @Override
    String javaOpts() { return "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"; }
}
