package dev.berth.engine.host;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.zip.CRC32C;

/** Facts about the host identity Berth runs as, and the unprivileged uid each workspace gets when Berth is root. */
public final class HostIdentity {
    /** Workspace uids are drawn from [BASE, BASE + SPAN): far above any login or system account. */
    public static final int UID_BASE = 1_500_000_000;
    public static final int UID_SPAN = 100_000_000;

    private HostIdentity() {}

    public static boolean isRoot() {
        try {
            return Files.readString(Path.of("/proc/self/status")).lines()
                    .filter(l -> l.startsWith("Uid:")).findFirst().map(l -> l.split("\\s+")[1].equals("0")).orElse(false);
        } catch (IOException e) {
            return false;
        }
    }

    public static boolean userNamespacesAllowed() {
        return readInt("/proc/sys/kernel/unprivileged_userns_clone", 1) != 0
                && readInt("/proc/sys/user/max_user_namespaces", 1) != 0;
    }

    /** A uid of its own for a workspace, stable across restarts (derived from the id). Only used when root. */
    public static int uidFor(String workspaceId) {
        CRC32C c = new CRC32C();
        c.update(workspaceId.getBytes(java.nio.charset.StandardCharsets.US_ASCII));
        return UID_BASE + (int) (c.getValue() % UID_SPAN);
    }

    private static int readInt(String path, int missing) {
        try {
            return Integer.parseInt(Files.readString(Path.of(path)).strip());
        } catch (IOException | NumberFormatException e) {
            return missing;
        }
    }
}
