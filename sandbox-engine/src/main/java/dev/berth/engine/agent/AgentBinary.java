package dev.berth.engine.agent;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * The guest agent binary shipped inside the Berth jar (classpath {@code berth/agent/berth-agent}), written once to a
 * content-addressed file so every driver can bind or copy it into its sandbox. Thread-safe.
 */
public final class AgentBinary {
    public static final String RESOURCE = "berth/agent/berth-agent";

    private AgentBinary() {}

    /** Returns the path of the agent under {@code dir/agent/}, writing it there first if needed. */
    public static synchronized Path extract(Path dir) throws IOException {
        byte[] bin;
        try (InputStream in = AgentBinary.class.getClassLoader().getResourceAsStream(RESOURCE)) {
            if (in == null) throw new IOException("the guest agent is missing from the classpath (" + RESOURCE + "); rebuild with mvn package");
            bin = in.readAllBytes();
        }
        String hash;
        try {
            hash = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bin)).substring(0, 16);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
        Path target = dir.resolve("agent").resolve("berth-agent-" + hash);
        if (Files.isRegularFile(target) && Files.size(target) == bin.length) return target;
        Files.createDirectories(target.getParent());
        Path tmp = target.resolveSibling("." + target.getFileName() + "." + ProcessHandle.current().pid());
        Files.write(tmp, bin);
        Files.setPosixFilePermissions(tmp, PosixFilePermissions.fromString("r-xr-xr-x"));
        Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        return target;
    }
}
