package dev.berth.engine.namespace;

import dev.berth.engine.host.AgentBinary;
import dev.berth.engine.host.BaseEtc;
import dev.berth.engine.host.BtrfsPool;
import dev.berth.engine.host.CgroupLimits;
import dev.berth.engine.host.DiskImage;
import dev.berth.engine.host.GuestNames;
import dev.berth.engine.host.HostIdentity;
import dev.berth.engine.host.ImageSeed;
import dev.berth.engine.host.Layout;
import dev.berth.engine.spi.Availability;
import dev.berth.engine.spi.DriverCapabilities;
import dev.berth.engine.spi.IsolationDriver;
import dev.berth.engine.spi.Sandbox;
import dev.berth.engine.spi.SandboxException;
import dev.berth.engine.spi.StartRequest;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.ArrayList;
import java.util.List;
import dev.berth.engine.spi.Limit;
import dev.berth.engine.spi.Resources;

/**
 * Isolation on the shared host kernel with bubblewrap: user, pid, mount, ipc, uts, cgroup and network namespaces,
 * no network device (only loopback), all capabilities dropped, a read-only base (the host's {@code /usr} and a curated
 * {@code /etc}), and a per-workspace writable layer on disk ({@code /workspace}, {@code /root}, {@code /usr/local},
 * {@code /var}). When Berth runs as root, every workspace runs as its own unprivileged host uid, so an escape from the
 * namespaces lands as a user that owns nothing but that workspace's files.
 *
 * <p>Honest limits: the host kernel is shared (a kernel exploit is an escape); park cannot keep memory (processes
 * stop, files stay). Thread-safe.
 */
public final class NamespaceDriver implements IsolationDriver {
    static final String NAME = "namespace";

    private final Path home;
    private final Path bwrap;
    /** The home's layer pool, or null where pools cannot be used (then each workspace gets an ext4 image). */
    private final BtrfsPool pool;
    private final NamespaceSettings settings;

    /**
     * A driver with the settings of the {@code berth.namespace.*} system properties ({@link NamespaceSettings#fromSystem}).
     *
     * @param home Berth home: the agent binary and the curated /etc are prepared under {@code home/images}.
     * @throws IllegalArgumentException when a property is out of range (the message names it and the allowed values)
     */
    public NamespaceDriver(Path home) { this(home, NamespaceSettings.fromSystem()); }

    /** A driver with the given settings; nothing is read from system properties. */
    public NamespaceDriver(Path home, NamespaceSettings settings) {
        this.home = home.toAbsolutePath();
        this.settings = settings;
        this.bwrap = findBwrap();
        this.pool = poolUnavailable() == null ? BtrfsPool.at(this.home.resolve("pool")) : null;
    }

    /** Whether the id range was checked against the host's users (once, before the first workspace claims a slot). */
    private volatile boolean rangeChecked;

    /**
     * Refuses, naming the numbers, an id range that cannot give each of {@code workspaces} live workspaces a slot of
     * its own (checked at server start against the configured workspace count). Only when Berth is root: otherwise
     * every workspace has one id, its server's.
     *
     * @throws IllegalArgumentException when the range is too small, or overlaps host users or subordinate ranges
     */
    public void checkIdRange(int workspaces) {
        if (HostIdentity.isRoot()) settings.idRange().check(Path.of("/etc"), workspaces);
        rangeChecked = true;
    }

    /** Null when the layer pool is used, else why not: the host cannot have one, or the settings refuse it. */
    private String poolUnavailable() {
        if (HostIdentity.isRoot() && settings.poolRefused() != null) return settings.poolRefused();
        return BtrfsPool.unavailable();
    }

    private static Path findBwrap() {
        for (String dir : System.getenv().getOrDefault("PATH", "/usr/bin:/bin").split(":")) {
            Path p = Path.of(dir, "bwrap");
            if (Files.isExecutable(p)) return p;
        }
        return null;
    }

    @Override
    public String name() { return NAME; }

    @Override
    public Availability probe() {
        if (bwrap == null) {
            return Availability.no("bubblewrap (bwrap) is not installed; `berth setup` installs it (apt-get install bubblewrap)");
        }
        if (!HostIdentity.userNamespacesAllowed()) {
            return Availability.no("the kernel does not allow user namespaces (kernel.unprivileged_userns_clone=0 or user.max_user_namespaces=0)");
        }
        return Availability.yes("bubblewrap at " + bwrap + "; user namespaces enabled"
                + (HostIdentity.isRoot() ? "; each workspace's ids map onto a range of host ids of its own ("
                        + settings.idRange().perWorkspace() + " ids from " + settings.idRange() + ")" : "")
                + (pool != null ? "; layers are subvolumes of the btrfs pool " + pool.image() + " (constant-time snapshots and forks)"
                        : "; layers are per-workspace ext4 images or directories (no layer pool: " + poolUnavailable() + ")"));
    }

    @Override
    public DriverCapabilities capabilities() {
        return new DriverCapabilities(NAME,
                "Linux namespaces (user, pid, mount, ipc, uts, net) on the shared host kernel; no network device; root's ordinary"
                        + " capabilities inside the workspace's user namespace only"
                        + (settings.unsafeUnconfinedRuns() ? "; commands NOT confined below the agent (unsafeUnconfinedRuns)" : ""),
                false, false, false, "none");
    }

    /** The host's /usr (shared read-only, so not an image of ours) and the agent binary, by its content hash. */
    @Override
    public String imageId() {
        try {
            return "host-usr+" + AgentBinary.extract(home.resolve("images")).getFileName();
        } catch (IOException e) {
            return null;
        }
    }

    @Override
    public Sandbox start(StartRequest request) throws SandboxException {
        Availability a = probe();
        if (!a.available()) throw new SandboxException("namespace isolation is not available: " + a.reason());
        try {
            Path agent = AgentBinary.extract(home.resolve("images"));
            Path etc = BaseEtc.prepare(home.resolve("images"));
            // Berth root: the workspace's slot of host ids (kept across park and restarts; a fork gets its own)
            int first = -1, ids = 1;
            if (HostIdentity.isRoot() && !(request.mode() instanceof StartRequest.Inspect)) {
                if (!rangeChecked) { // the server checks at start (checkIdRange); a library user's engine here
                    try {
                        settings.idRange().check(Path.of("/etc"), 1);
                    } catch (IllegalArgumentException e) {
                        throw new SandboxException(e.getMessage(), e);
                    }
                    rangeChecked = true;
                }
                first = (int) settings.idRange().claim(home.resolve("ids"), request.stateDir(), request.workspaceId());
                ids = settings.idRange().perWorkspace();
            }
            Layout layout = Layout.of(request, pool, first, ids);
            try {
                switch (request.mode()) {
                    case StartRequest.Fresh f -> {
                        layout.createFresh();
                        if (request.image() != null && request.image().writable()) {
                            layout.chownForSandbox(request.image().rootTree()); // a build's scratch root: the sandbox writes it
                        } else if (request.image() != null) {
                            ImageSeed.seed(request.image(), layout);
                        }
                    }
                    case StartRequest.Resume r -> layout.prepare(); // idempotent: fills in what a crash may have left out
                    case StartRequest.Fork f -> layout.copyFrom(f.snapshotStateDir());
                    case StartRequest.Inspect i -> throw new SandboxException(name() + " workspaces keep no saved memory to fail"
                            + " verification, so they are never damaged and never inspected: open them as usual");
                }
                if (layout.usesImage()) layout.installBase(etc, agent);
                // the workspace's own writable /etc and /home (a recipe build's scratch root is writable already)
                if (request.image() == null || !request.image().writable()) dev.berth.engine.host.WritableRoot.seed(layout, etc, request.image());
                GuestNames.prepare(request.image(), layout);
                // an imported image's read-only root, its owners shifted onto the workspace's ids (Berth root)
                Path imageRoot = request.image() == null || request.image().writable() ? null : layout.mountImageRoot(request.image().rootTree());
                // made writable for this workspace alone: an overlay whose upper directory is in its layer (Berth root)
                if (imageRoot != null && HostIdentity.isRoot()) imageRoot = dev.berth.engine.host.RootOverlay.mount(imageRoot, layout);
                return NamespaceSandbox.launch(bwrap, agent, etc, layout, request, settings, imageRoot);
            } catch (IOException | SandboxException | RuntimeException e) {
                layout.release();
                throw e;
            }
        } catch (IOException e) {
            throw new SandboxException("preparing the namespace sandbox failed: " + e.getMessage(), e);
        }
    }

    /** The workspace is being deleted: its slot of host ids is free again. */
    @Override
    public void release(Path stateDir) {
        if (HostIdentity.isRoot()) settings.idRange().release(home.resolve("ids"), stateDir);
    }

    @Override
    public void cleanupRuntime(Path runtimeDir) {
        // The sandbox dies with the server (--die-with-parent); left behind can be the image mount (detached first:
        // the engine deletes the runtime directory next, and must not reach the workspace's files through it) and
        // the cgroups.
        DiskImage.unmount(dev.berth.engine.host.RootOverlay.merged(runtimeDir)); // over the layer: first
        DiskImage.unmount(runtimeDir.resolve("disk"));
        DiskImage.unmount(runtimeDir.resolve("disk.raw")); // a crash between the two mounts of an idmapped image
        DiskImage.unmount(runtimeDir.resolve("image-root"));
        CgroupLimits.killAndRemove(runtimeDir.getFileName().toString());
    }

    @Override
    public List<Limit> limits(Resources r) {
        boolean root = HostIdentity.isRoot();
        List<Limit> out = new ArrayList<>(root ? CgroupLimits.predict(r) : CgroupLimits.none(r, "Berth is not root: it cannot create cgroups").limits());
        out.add(pool != null ? Limit.enforced("disk", r.diskMiB(), "MiB", POOL_DISK)
                : root ? Limit.enforced("disk", r.diskMiB(), "MiB", "a size-limited ext4 image per workspace (loop mount)")
                : Limit.notEnforced("disk", r.diskMiB(), "MiB", "Berth is not root: no loop mount, the layer is a plain directory"));
        out.addAll(root ? dev.berth.engine.host.BlockIoLimits.predict(r.io())
                : Limit.ioNotEnforced(r.io(), "Berth is not root: it cannot create cgroups, and the layer is a plain directory"));
        return out;
    }

    /** How the disk limit of a workspace in the layer pool is enforced. */
    static final String POOL_DISK = "a btrfs qgroup limit on the exclusive bytes of the workspace's subvolume in the home's layer pool;"
            + " writes beyond it get EDQUOT (data shared with the snapshot it was forked from is not counted)";

    /** Forks of this driver own their files (a subvolume snapshot or a copy): deleting their snapshot takes nothing from them. */
    @Override
    public boolean forksNeedSnapshot() { return false; }

    @Override
    public void snapshotParked(Path workspaceStateDir, Path snapshotStateDir) throws SandboxException {
        try {
            if (Files.exists(workspaceStateDir.resolve(BtrfsPool.REF_FILE))) {
                Layout.snapshotPool(workspaceStateDir, snapshotStateDir);
                return;
            }
            Layout.copyTree(workspaceStateDir, snapshotStateDir);
        } catch (IOException e) {
            throw new SandboxException("copying the workspace files failed: " + e.getMessage(), e);
        }
    }
}
