package dev.berth.engine.host;

import java.io.IOException;
import java.nio.file.Path;

/**
 * The guest agent binary shipped inside the Berth jar (classpath {@code berth/agent/berth-agent}), written once to a
 * content-addressed file so every driver can bind or copy it into its sandbox. Thread-safe.
 *
 * <p>It lives in {@code host}, beside {@link ShippedBinary}, not in {@code agent}: the agent package is the wire
 * client the SPI hands out, and it must not reach back into host helpers (that closed the cycle
 * {@code spi -> agent -> host -> spi}).
 */
public final class AgentBinary {
    public static final String RESOURCE = "berth/agent/berth-agent";

    private AgentBinary() {}

    /**
     * Root's ordinary capabilities, which the agent keeps for its confined runs (the drivers give them to the agent,
     * beside CAP_SYS_ADMIN for the confinement itself): {@code RUN_CAPS} in the agent's {@code confine.c}, where each
     * one withheld has its reason (Docker's default set less CAP_MKNOD and CAP_NET_RAW). A test holds the two lists
     * equal.
     */
    public static final java.util.List<String> RUN_CAPS = java.util.List.of("CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FOWNER",
            "CAP_FSETID", "CAP_KILL", "CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT",
            "CAP_SETFCAP", "CAP_AUDIT_WRITE");

    /** Returns the path of the agent under {@code dir/agent/}, writing it there first if needed. */
    public static Path extract(Path dir) throws IOException {
        return ShippedBinary.extract(RESOURCE, "berth-agent", dir.resolve("agent"));
    }
}
