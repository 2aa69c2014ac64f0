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

    /** Returns the path of the agent under {@code dir/agent/}, writing it there first if needed. */
    public static Path extract(Path dir) throws IOException {
        return ShippedBinary.extract(RESOURCE, "berth-agent", dir.resolve("agent"));
    }
}
