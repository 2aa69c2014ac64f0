package dev.berth.engine.namespace;

import dev.berth.engine.spi.StartRequest;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * The writable layer of a namespace workspace on disk, and how it is mounted.
 *
 * <pre>
 * state/workspace  -> /workspace   the project (default cwd)
 * state/home       -> /root        $HOME: dotfiles, caches, ~/.npm, ~/.cache/pip
 * state/usr-local  -> /usr/local   global installs (npm -g, pip without --user)
 * state/var        -> /var         /var/tmp, /var/lib of tools that want it
 * runtime/sock/    -> /run/berth   the agent's socket (host side listens)
 * </pre>
 *
 * Everything else is read-only or a fresh tmpfs ({@code /tmp}, cleared on every start, like a reboot).
 */
record Layout(Path state, Path runtime, String workspaceId, int uid) {
    static final List<String> DIRS = List.of("workspace", "home", "usr-local", "var", "var/tmp", "var/lib", "var/cache");

    static Layout of(StartRequest r) {
        return new Layout(r.stateDir(), r.runtimeDir(), r.workspaceId(),
                HostIdentity.isRoot() ? HostIdentity.uidFor(r.workspaceId()) : -1);
    }

    Path socketDir() { return runtime.resolve("sock"); }
    Path socket() { return socketDir().resolve("agent.sock"); }

    void createFresh() throws IOException {
        for (String d : DIRS) Files.createDirectories(state.resolve(d));
        Files.createDirectories(socketDir());
        checkReachable();
        chownForSandbox(state);
        chownForSandbox(socketDir());
        // only this workspace's uid may enter its layer: another workspace that escaped its namespaces finds it shut
        var owner = java.nio.file.attribute.PosixFilePermissions.fromString("rwx------");
        Files.setPosixFilePermissions(state, owner);
        Files.setPosixFilePermissions(socketDir(), owner);
    }

    /** The sandbox runs as another uid: every directory above its layer must let others pass through. */
    void checkReachable() throws IOException {
        if (uid < 0) return;
        for (Path p = state.toAbsolutePath().getParent(); p != null; p = p.getParent()) {
            var perms = Files.getPosixFilePermissions(p);
            if (!perms.contains(java.nio.file.attribute.PosixFilePermission.OTHERS_EXECUTE)) {
                throw new IOException("workspace sandboxes run as their own uid and cannot reach " + state + ": directory "
                        + p + " is not traversable by others; chmod o+x it or choose another --home");
            }
        }
    }

    void copyFrom(Path snapshotState) throws IOException {
        copyTree(snapshotState, state);
        createFresh();
    }

    /** Gives the tree to the workspace's own uid (root only), so the sandbox can write its layer and nothing else. */
    void chownForSandbox(Path p) throws IOException {
        if (uid < 0) return;
        NamespaceDriver.exec("chown", "-R", "--no-dereference", uid + ":" + uid, p.toString());
    }

    /** Copies a tree with owners, modes, links and sparse files kept (GNU cp -a). */
    static void copyTree(Path from, Path to) throws IOException {
        Files.createDirectories(to);
        NamespaceDriver.exec("cp", "-a", "--reflink=auto", from.toString() + "/.", to.toString());
    }
}
