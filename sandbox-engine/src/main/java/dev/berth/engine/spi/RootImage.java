package dev.berth.engine.spi;

import java.nio.file.Path;
import java.util.Objects;

/**
 * An imported image a sandbox runs on instead of its driver's built-in one: the one hook by which drivers learn
 * which root tree or base disk a workspace uses. Both paths are read-only artifacts of the image store, never
 * modified by a driver.
 *
 * @param name     the name the workspace was opened with (for messages)
 * @param digest   content digest of the image ({@code sha256:...}, the manifest's)
 * @param rootTree read-only root directory tree (namespace driver: entered read-only, the workspace's layer on top)
 * @param baseDisk read-only ext4 filesystem of the same tree (microVM driver: lower layer of the guest's overlay)
 * @param runAs    the user the image config's {@code User} names, resolved through the image's {@code /etc/passwd};
 *                 null: root. Applied by every driver (namespace: the sandbox's uid mapping; microVM and gVisor: the
 *                 guest agent's {@code --run-as}; see sandbox-engine/DESIGN.md, Images)
 * @param writable a recipe build's root: {@code rootTree} is a scratch copy the sandbox enters writable, and its
 *                 writes land in it (no seeded writable directories over it). Only the namespace driver is handed
 *                 one (the engine opens builds on that level only)
 */
public record RootImage(String name, String digest, Path rootTree, Path baseDisk, RunAs runAs, boolean writable) {
    /** A user and group the sandbox's runs take inside it; {@code name} is null for a bare uid. */
    public record RunAs(String name, int uid, int gid) {
        /** {@code name(uid:gid)} or {@code uid:gid}. */
        public String label() { return (name == null ? "" : name + "(") + Integer.toUnsignedString(uid) + ":"
                + Integer.toUnsignedString(gid) + (name == null ? "" : ")"); }
    }

    public RootImage {
        Objects.requireNonNull(digest, "digest");
        Objects.requireNonNull(rootTree, "rootTree");
        Objects.requireNonNull(baseDisk, "baseDisk");
    }

    /** Short form for ids and messages: {@code name@sha256:0123456789ab}. */
    public String label() {
        return name + "@" + digest.substring(0, Math.min(digest.length(), 19));
    }
}
