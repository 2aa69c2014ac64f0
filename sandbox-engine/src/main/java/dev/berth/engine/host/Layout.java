package dev.berth.engine.host;

import dev.berth.engine.spi.StartRequest;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * The writable layer of a namespace workspace on disk, and how it is mounted.
 *
 * <pre>
 * layer/workspace  -> /workspace   the project (default cwd)
 * layer/home       -> /root        $HOME: dotfiles, caches, ~/.npm, ~/.cache/pip
 * layer/usr-local  -> /usr/local   global installs (npm -g, pip without --user)
 * layer/var        -> /var         /var/tmp, /var/lib of tools that want it
 * layer/etc/hosts  -> /etc/hosts   the workspace's own hosts file (GuestNames.ensureHosts)
 * layer/.berth/    -> /etc, /run/berth-agent   (image layout: root-owned copies, refreshed at every start)
 * layer/.berth-sock/ (image) or runtime/sock/ -> /run/berth   the agent's socket (host side listens)
 * </pre>
 *
 * When Berth is root the layer is a mounted filesystem on {@code runtime/disk}: a subvolume of the home's btrfs
 * layer pool ({@code state/layer.btrfs} names it; {@link BtrfsPool}; the namespace driver where the pool can be used)
 * or a size-limited ext4 image ({@code state/disk.ext4}; {@link DiskImage}; gVisor, hosts without btrfs, and
 * workspaces made before the pool). Which one a workspace uses is decided by which of the two files its state
 * directory holds, so the layouts of earlier builds stay readable. Otherwise, and for workspaces created before
 * images, plain directories in {@code state/} (no disk quota, and bind sources show host paths in the sandbox's
 * mount table).
 * Everything else is read-only or a fresh tmpfs ({@code /tmp}, cleared on every start, like a reboot).
 */
public record Layout(Path state, Path runtime, String workspaceId, int uid, int ids, int diskMiB, BtrfsPool pool) {
    public static final List<String> DIRS = List.of("workspace", "home", "usr-local", "var", "var/tmp", "var/lib", "var/cache");

    /**
     * The layout of a sandbox whose ids inside are the host ids {@code uid .. uid + ids - 1} (namespace driver, Berth
     * root: the workspace's slot of {@link IdRanges}); {@code uid} -1 when Berth is not root (one id, its own). A new
     * workspace's layer is a subvolume of {@code pool} when it is not null.
     */
    public static Layout of(StartRequest r, BtrfsPool pool, int uid, int ids) {
        return new Layout(r.stateDir(), r.runtimeDir(), r.workspaceId(), uid, ids, r.resources().diskMiB(), pool);
    }

    /** The layout of a sandbox whose files are served by a privileged helper as {@code uid} (gVisor's gofer: 0). */
    public static Layout owned(StartRequest r, int uid) {
        return new Layout(r.stateDir(), r.runtimeDir(), r.workspaceId(), uid, 1, r.resources().diskMiB(), null);
    }

    /** In the image layout the socket lives inside the image too, so its bind names no host path. */
    public Path socketDir() { return usesImage() ? mountPoint().resolve(".berth-sock") : runtime.resolve("sock"); }
    public Path socket() { return socketDir().resolve("agent.sock"); }
    public Path image() { return state.resolve(DiskImage.FILE); }
    public Path mountPoint() { return runtime.resolve("disk"); }
    /** Where the image is mounted for a moment before an idmapped mount of it moves to {@link #mountPoint}. */
    public Path rawMountPoint() { return runtime.resolve("disk.raw"); }
    /** The uid that owns the image's files on disk (its first workspace's), when recorded. */
    public Path ownerFile() { return state.resolve(OWNER_FILE); }

    /** Names the on-disk owner uid of {@code disk.ext4}: forks of it map that uid onto their own. */
    public static final String OWNER_FILE = "disk.owner";

    /** The image's on-disk owner, or -1 when unrecorded (images made before it was recorded). */
    int diskOwner() throws IOException {
        if (!Files.isRegularFile(ownerFile(), java.nio.file.LinkOption.NOFOLLOW_LINKS)) return -1;
        String v = Files.readString(ownerFile()).strip();
        try {
            return Integer.parseInt(v);
        } catch (NumberFormatException e) {
            throw new IOException(ownerFile() + " does not hold a uid: '" + v + "'");
        }
    }

    /** Whether this workspace's image is mounted with its owner's ids mapped onto this workspace's uid. */
    public boolean mapsOwner() throws IOException {
        int owner = diskOwner();
        return uid > 0 && owner > 0 && owner != uid && IdmappedMount.unavailable() == null;
    }

    /** Whether the writable layer is a mounted filesystem, an ext4 image or a pool subvolume (quota enforced, no host paths inside). */
    public boolean usesImage() { return Files.exists(image()) || usesPool(); }

    /** Whether the layer is an ext4 image of its own (which {@code fsfreeze} can freeze alone). */
    public boolean usesExt4Image() { return Files.exists(image()); }

    /** The reference naming this workspace's subvolume in the layer pool. */
    public Path layerRef() { return state.resolve(BtrfsPool.REF_FILE); }

    /** Whether the layer is a subvolume of the layer pool. */
    public boolean usesPool() { return Files.exists(layerRef(), java.nio.file.LinkOption.NOFOLLOW_LINKS); }

    /** Where {@link #DIRS} live: the mounted image, or the state directory. */
    public Path layer() { return usesImage() ? mountPoint() : state; }

    /** A new workspace: an image when Berth can mount one, else directories. */
    public void createFresh() throws IOException {
        if (uid > 0 && pool != null) {
            try (BtrfsPool.Lease l = pool.open()) { // held through prepare(): the pool is mounted once
                String name = l.create(uid, diskMiB);
                try {
                    Files.writeString(ownerFile(), uid + "\n");
                    pool.writeRef(state, name);
                } catch (IOException | RuntimeException e) {
                    l.delete(name);
                    throw e;
                }
                prepare();
            }
            return;
        } else if (uid >= 0) {
            DiskImage.create(image(), diskMiB, uid);
            Files.writeString(ownerFile(), uid + "\n");
        }
        prepare();
    }

    /**
     * Makes the layer usable: mounts the image (if any), creates missing directories (idempotent: fills in what a
     * crash may have left out) and gives them to the workspace's uid.
     */
    public void prepare() throws IOException {
        checkReachable(state);
        checkReachable(runtime);
        if (usesPool()) {
            mountPoolLayer();
        } else if (usesImage() && mapsOwner()) {
            DiskImage.mountMapped(image(), rawMountPoint(), mountPoint(), diskOwner(), uid, ids);
        } else if (usesImage()) {
            DiskImage.mount(image(), mountPoint());
            // the filesystem's root belongs to the workspace that made the image: a fork's is another uid
            if (uid >= 0) HostCommand.exec("chown", "--no-dereference", uid + ":" + uid, mountPoint().toString());
        }
        Files.createDirectories(socketDir());
        Path layer = layer();
        for (String d : DIRS) Files.createDirectories(layer.resolve(d));
        if (uid >= 0 && usesImage()) {
            // in an image only the directories made here can have another owner (the sandbox writes as its uid)
            List<String> cmd = new java.util.ArrayList<>(List.of("chown", "--no-dereference", uid + ":" + uid));
            for (String d : DIRS) cmd.add(layer.resolve(d).toString());
            HostCommand.exec(cmd.toArray(String[]::new));
        }
        chownForSandbox(socketDir());
        // only this workspace's uid may enter its layer: another workspace that escaped its namespaces finds it shut
        var owner = java.nio.file.attribute.PosixFilePermissions.fromString("rwx------");
        if (!usesImage()) {
            chownForSandbox(state);
            Files.setPosixFilePermissions(state, owner);
        }
        Files.setPosixFilePermissions(socketDir(), owner);
    }

    /** Copies the shared read-only parts into the image so their bind sources name no host path. */
    public void installBase(Path etc, Path agent) throws IOException {
        Path base = layer().resolve(".berth");
        // the copies are root-owned and outside every bind: a stamp naming their sources is enough to skip a resume
        String stamp = agent.getFileName() + " " + etc.getFileName() + "\n";
        Path st = base.resolve("stamp");
        if (Files.isRegularFile(st, java.nio.file.LinkOption.NOFOLLOW_LINKS) && Files.readString(st).equals(stamp)) return;
        if (Files.exists(base)) HostCommand.exec("rm", "-rf", base.toString());
        Files.createDirectories(base);
        HostCommand.exec("cp", "-a", etc.toString(), base.resolve("etc").toString());
        HostCommand.exec("cp", agent.toString(), base.resolve("berth-agent").toString());
        HostCommand.exec("chown", "-R", "0:0", base.toString());
        HostCommand.exec("chmod", "0755", base.toString(), base.resolve("berth-agent").toString());
        Files.writeString(st, stamp);
    }

    /** The sandbox runs as another uid: every directory above {@code dir} must let others pass through. */
    public void checkReachable(Path dir) throws IOException {
        if (uid < 0) return;
        for (Path p = dir.toAbsolutePath().getParent(); p != null; p = p.getParent()) {
            var perms = Files.getPosixFilePermissions(p);
            if (!perms.contains(java.nio.file.attribute.PosixFilePermission.OTHERS_EXECUTE)) {
                throw new IOException("workspace sandboxes run as their own uid and cannot reach " + dir + ": directory "
                        + p + " is not traversable by others; chmod o+x it or choose another --home");
            }
        }
    }

    /**
     * Binds the workspace's subvolume on {@link #mountPoint} (the pool mount's {@code nosuid,nodev,noatime} carry
     * over), idmapped when its files belong to another uid on disk (a fork's).
     */
    private void mountPoolLayer() throws IOException {
        BtrfsPool.Ref ref = BtrfsPool.readRef(layerRef());
        if (uid <= 0) throw new IOException("this workspace's files live in the layer pool " + ref.pool() + ", which needs Berth to run as root");
        BtrfsPool p = BtrfsPool.at(ref.pool());
        try (BtrfsPool.Lease l = p.open()) {
            Path sub = l.path(ref.subvolume());
            if (!Files.isDirectory(sub, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
                throw new IOException("the workspace's layer " + ref.subvolume() + " is missing from the pool " + p.image());
            }
            Files.createDirectories(mountPoint());
            if (DiskImage.isMounted(mountPoint())) DiskImage.unmount(mountPoint()); // left by a crash
            if (mapsOwner()) {
                IdmappedMount.bind(sub, mountPoint(), diskOwner(), uid, ids);
            } else {
                HostCommand.exec("mount", "--bind", sub.toString(), mountPoint().toString());
                HostCommand.exec("chown", "--no-dereference", uid + ":" + uid, mountPoint().toString());
            }
        }
        Files.setPosixFilePermissions(mountPoint(), java.nio.file.attribute.PosixFilePermissions.fromString("rwx------"));
    }

    /**
     * A snapshot of a pool layer: a read-only subvolume snapshot (constant time) named in {@code snapshotState},
     * with the on-disk owner recorded. The caller keeps the workspace's processes frozen (or it is parked); btrfs
     * flushes the subvolume's dirty data into the snapshot. Returns the bytes the snapshot references.
     */
    public static long snapshotPool(Path workspaceState, Path snapshotState) throws IOException {
        BtrfsPool.Ref ref = BtrfsPool.readRef(workspaceState.resolve(BtrfsPool.REF_FILE));
        BtrfsPool p = BtrfsPool.at(ref.pool());
        Files.createDirectories(snapshotState);
        try (BtrfsPool.Lease l = p.open()) {
            String name = l.snapshot(ref.subvolume(), true, 0);
            try {
                Path owner = workspaceState.resolve(OWNER_FILE);
                if (Files.isRegularFile(owner, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
                    Files.copy(owner, snapshotState.resolve(OWNER_FILE), java.nio.file.StandardCopyOption.COPY_ATTRIBUTES);
                }
                p.writeRef(snapshotState, name);
            } catch (IOException | RuntimeException e) {
                l.delete(name);
                throw e;
            }
            return l.committedBytes(name)[0]; // the snapshot's own commit accounted it: no second commit needed
        }
    }

    /** A fork: the snapshot's files, given to this workspace's uid (the snapshot's workspace had its own). */
    public void copyFrom(Path snapshotState) throws IOException {
        Path snapRef = snapshotState.resolve(BtrfsPool.REF_FILE);
        if (Files.isRegularFile(snapRef, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
            BtrfsPool.Ref ref = BtrfsPool.readRef(snapRef);
            try (BtrfsPool.Lease held = BtrfsPool.at(ref.pool()).open()) { // one mount of the pool for both steps
                forkPool(snapshotState, ref);
                prepare();
            }
            return;
        }
        copyTree(snapshotState, state);
        prepare();
        // an image whose owner is recorded is mapped onto this uid (constant time); an older one is chowned file by file
        if (usesImage() && !mapsOwner()) {
            for (String d : List.of("workspace", "home", "usr-local", "var", WritableRoot.ETC, WritableRoot.HOMES, RootOverlay.UPPER)) if (Files.exists(layer().resolve(d))) chownForSandbox(layer().resolve(d));
            if (uid >= 0) Files.writeString(ownerFile(), uid + "\n");
        }
    }

    /** A writable snapshot of the snapshot's subvolume (constant time) with this workspace's own disk limit. */
    private void forkPool(Path snapshotState, BtrfsPool.Ref ref) throws IOException {
        if (uid <= 0) throw new IOException("this snapshot's files live in the layer pool " + ref.pool() + ", which needs Berth to run as root");
        Path owner = snapshotState.resolve(OWNER_FILE);
        if (!Files.isRegularFile(owner, java.nio.file.LinkOption.NOFOLLOW_LINKS)) throw new IOException(snapshotState + " names no owner of its layer");
        BtrfsPool p = BtrfsPool.at(ref.pool());
        Files.createDirectories(state);
        try (BtrfsPool.Lease l = p.open()) {
            String name = l.snapshot(ref.subvolume(), false, diskMiB);
            try {
                Files.copy(owner, ownerFile(), java.nio.file.StandardCopyOption.REPLACE_EXISTING);
                p.writeRef(state, name);
            } catch (IOException | RuntimeException e) {
                l.delete(name);
                throw e;
            }
        }
    }

    /** Where an imported image's root tree is mounted shifted onto this workspace's ids ({@link #mountImageRoot}). */
    public Path imageRoot() { return runtime.resolve("image-root"); }

    /**
     * Mounts an imported image's read-only root tree at {@link #imageRoot} with its ids 0..ids-1 shown as this
     * workspace's host ids (an idmapped mount): inside, the image's files keep their owners, root's as root.
     * Returns where to bind it from: {@link #imageRoot}, or {@code tree} itself when there is no id range.
     */
    public Path mountImageRoot(Path tree) throws IOException {
        if (uid <= 0 || ids <= 1) return tree;
        if (DiskImage.isMounted(imageRoot())) DiskImage.unmount(imageRoot()); // left by a crash
        IdmappedMount.bindShifted(tree, imageRoot(), uid, ids);
        return imageRoot();
    }

    /** Detaches the image (if mounted); the sandbox's processes must be gone or going. */
    public void release() {
        if (pool != null) pool.awaitFlushes(java.time.Duration.ofSeconds(5)); // a flush's sync -f holds the layer's mount
        DiskImage.unmount(RootOverlay.merged(runtime)); // its upper directory is in the layer
        DiskImage.unmount(mountPoint());
        DiskImage.unmount(rawMountPoint());
        DiskImage.unmount(imageRoot());
    }

    /** Gives the tree to the workspace's own uid (root only), so the sandbox can write its layer and nothing else. */
    public void chownForSandbox(Path p) throws IOException {
        if (uid < 0) return;
        HostCommand.exec("chown", "-R", "--no-dereference", uid + ":" + uid, p.toString());
    }

    /** Copies a tree with owners, modes, links and sparse files kept (GNU cp -a). */
    public static void copyTree(Path from, Path to) throws IOException {
        Files.createDirectories(to);
        HostCommand.exec("cp", "-a", "--reflink=auto", from.toString() + "/.", to.toString());
    }
}
